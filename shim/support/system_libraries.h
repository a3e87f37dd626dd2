// The groups of system_libraries.def and the lookup of a frame's module file name, function or
// Python file in it, for the shim's out-of-memory labels and the analyzer's views alike. No
// allocation, no lock.
#pragma once

#include <fnmatch.h>

#include <cstddef>
#include <cstring>

#include "shim/support/function_name.h"

namespace vramshim::support {

enum class LibraryGroup {
  kUser,  // not in the list: the user's code, or a library of theirs
  kInterpreter,
  kForeignCalls,
  kCxxRuntime,
  kCLibrary,
  kCuda,
  kFramework,  // a framework's allocator and operators (LibTorch, TensorRT, TensorFlow …)
  kShim,
};

// The group of a module by its file name (basename, "libffi.so.8"); kUser for one not listed.
inline LibraryGroup system_library_group(const char* basename) {
  struct Entry {
    const char* prefix;
    LibraryGroup group;
  };
  static constexpr Entry kEntries[] = {
#define VRAMSHIM_SYSTEM_LIBRARY(prefix, group) {prefix, LibraryGroup::group},
#define VRAMSHIM_SYSTEM_FUNCTION(pattern, group)
#define VRAMSHIM_PYTHON_FILE(pattern, group)
#include "shim/support/system_libraries.def"
#undef VRAMSHIM_PYTHON_FILE
#undef VRAMSHIM_SYSTEM_FUNCTION
#undef VRAMSHIM_SYSTEM_LIBRARY
  };
  for (const Entry& entry : kEntries) {
    if (std::strncmp(basename, entry.prefix, std::strlen(entry.prefix)) == 0) return entry.group;
  }
  return LibraryGroup::kUser;
}

// An fnmatch(3) pattern of the list and its group.
struct PatternGroup {
  const char* pattern;
  LibraryGroup group;
};

// The group of the first of `entries` that `text` matches; kUser for none.
template <size_t kCount>
LibraryGroup first_matching_group(const PatternGroup (&entries)[kCount], const char* text) {
  for (const PatternGroup& entry : entries) {
    if (fnmatch(entry.pattern, text, 0) == 0) return entry.group;
  }
  return LibraryGroup::kUser;
}

// The group of a function by its demangled name ("cudart::cudaApiMalloc(void**, unsigned long)");
// kUser for one not listed.
inline LibraryGroup system_function_group(const char* function) {
  static constexpr PatternGroup kEntries[] = {
#define VRAMSHIM_SYSTEM_LIBRARY(prefix, group)
#define VRAMSHIM_SYSTEM_FUNCTION(pattern, group) {pattern, LibraryGroup::group},
#define VRAMSHIM_PYTHON_FILE(pattern, group)
#include "shim/support/system_libraries.def"
#undef VRAMSHIM_PYTHON_FILE
#undef VRAMSHIM_SYSTEM_FUNCTION
#undef VRAMSHIM_SYSTEM_LIBRARY
  };
  return first_matching_group(kEntries, without_return_type(function));
}

// The group of a Python frame by its file's path ("/venv/lib/python3.12/site-packages/torch/nn/
// functional.py"); kUser for one not listed.
inline LibraryGroup python_file_group(const char* file) {
  static constexpr PatternGroup kEntries[] = {
#define VRAMSHIM_SYSTEM_LIBRARY(prefix, group)
#define VRAMSHIM_SYSTEM_FUNCTION(pattern, group)
#define VRAMSHIM_PYTHON_FILE(pattern, group) {pattern, LibraryGroup::group},
#include "shim/support/system_libraries.def"
#undef VRAMSHIM_PYTHON_FILE
#undef VRAMSHIM_SYSTEM_FUNCTION
#undef VRAMSHIM_SYSTEM_LIBRARY
  };
  return first_matching_group(kEntries, file);
}

// The group of a frame: its module's, else (code linked into a module of the user's) its
// function's. Either may be empty ("") when unknown.
inline LibraryGroup system_code_group(const char* module_basename, const char* function) {
  const LibraryGroup by_module = system_library_group(module_basename);
  if (by_module != LibraryGroup::kUser || function[0] == '\0') return by_module;
  return system_function_group(function);
}

// Frames of the interpreter and of libffi lie between a Python program's lines.
inline bool between_python_lines(LibraryGroup group) {
  return group == LibraryGroup::kInterpreter || group == LibraryGroup::kForeignCalls;
}

}  // namespace vramshim::support
