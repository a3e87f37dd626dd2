// The groups of system_libraries.def and the lookup of a module's file name in it, for the shim's
// out-of-memory labels and the analyzer's views alike. No allocation, no lock.
#pragma once

#include <cstring>

namespace vramshim::support {

enum class LibraryGroup {
  kUser,  // not in the list: the user's code, or a library of theirs
  kInterpreter,
  kForeignCalls,
  kCxxRuntime,
  kCLibrary,
  kCuda,
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
#include "shim/support/system_libraries.def"
#undef VRAMSHIM_SYSTEM_LIBRARY
  };
  for (const Entry& entry : kEntries) {
    if (std::strncmp(basename, entry.prefix, std::strlen(entry.prefix)) == 0) return entry.group;
  }
  return LibraryGroup::kUser;
}

// Frames of the interpreter and of libffi lie between a Python program's lines.
inline bool between_python_lines(LibraryGroup group) {
  return group == LibraryGroup::kInterpreter || group == LibraryGroup::kForeignCalls;
}

}  // namespace vramshim::support
