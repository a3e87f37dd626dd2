#include "shim/oom/frame_labels.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/attribution/stack_table.h"
#include "shim/attribution/stack_table_budget.h"
#include "shim/python/python_frame_tag.h"
#include "shim/support/system_libraries.h"

namespace vramshim::oom {
namespace {

constexpr size_t kMaxLabel = 100;

std::string demangled(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && text != nullptr ? text : name;
  std::free(text);
  if (result.size() > kMaxLabel) result = result.substr(0, kMaxLabel - 3) + "...";
  return result;
}

// The dynamic symbol around a return address (the call ends just before it), or null.
const char* symbol_of(uint64_t address, Dl_info* info) {
  if (address == 0 || dladdr(reinterpret_cast<void*>(address - 1), info) == 0) return nullptr;
  return info->dli_sname;
}

// Frames of the interpreter, libffi, the C and C++ runtimes, the CUDA libraries and the frameworks'
// allocators name no user code (shim/support/system_libraries.def), by module or, for code linked
// into the user's binaries, by function.
bool in_system_library(uint64_t address) {
  Dl_info info{};
  if (address == 0 || dladdr(reinterpret_cast<void*>(address - 1), &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* module = slash != nullptr ? slash + 1 : info.dli_fname;
  int status = 0;
  char* function = info.dli_sname != nullptr
                       ? abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status)
                       : nullptr;
  const char* name = function != nullptr ? function : info.dli_sname;
  const support::LibraryGroup group =
      support::system_code_group(module, name != nullptr ? name : "");
  std::free(function);
  return group != support::LibraryGroup::kUser;
}

std::string module_and_offset(uint64_t address) {
  Dl_info info{};
  char text[64];
  if (address > 0 && dladdr(reinterpret_cast<void*>(address - 1), &info) != 0 &&
      info.dli_fname != nullptr) {
    const char* slash = std::strrchr(info.dli_fname, '/');
    std::snprintf(
        text, sizeof(text), "+0x%llx",
        static_cast<unsigned long long>(address - reinterpret_cast<uint64_t>(info.dli_fbase)));
    return std::string(slash != nullptr ? slash + 1 : info.dli_fname) + text;
  }
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

}  // namespace

std::string frame_label(uint64_t frame, const python::PythonStacks* python) {
  if (frame == attribution::StackTable::kOverflowAddress) return attribution::kPastStackTableName;
  if (frame == attribution::StackTable::kCutAddress) return attribution::StackTable::kCutName;
  if (python::is_python_frame(frame)) {
    if (python == nullptr) return "(Python frame)";
    const python::PythonFrameInfo info = python->describe(frame);
    return info.file + ":" + std::to_string(info.line) + " " + info.function;
  }
  Dl_info info{};
  if (const char* name = symbol_of(frame, &info)) return demangled(name);
  return module_and_offset(frame);
}

std::string site_label(const attribution::StackTable& stacks, const python::PythonStacks* python,
                       int32_t stack) {
  if (stack < 0 || static_cast<size_t>(stack) >= stacks.stack_count()) return "(no stack)";
  const attribution::StackTable::Frames frames = stacks.frames_of(static_cast<uint32_t>(stack));
  if (frames.depth == 0) return "(no stack)";
  for (uint32_t i = 0; i < frames.depth; ++i) {
    const uint64_t frame = stacks.frame_address(frames.frame_ids[i]);
    if (python::is_python_frame(frame)) return frame_label(frame, python);
  }
  // The innermost frame of the program's own code: named if it can be, else module+offset.
  uint64_t first_own = 0;
  for (uint32_t i = 0; i < frames.depth; ++i) {
    const uint64_t frame = stacks.frame_address(frames.frame_ids[i]);
    if (in_system_library(frame)) continue;
    Dl_info info{};
    if (symbol_of(frame, &info) != nullptr) return frame_label(frame, python);
    if (first_own == 0) first_own = frame;
  }
  return frame_label(first_own != 0 ? first_own : stacks.frame_address(frames.frame_ids[0]),
                     python);
}

std::vector<std::string> first_frames(const attribution::StackTable& stacks,
                                      const python::PythonStacks* python, int32_t stack,
                                      size_t count) {
  std::vector<std::string> labels;
  if (stack < 0 || static_cast<size_t>(stack) >= stacks.stack_count()) return labels;
  const attribution::StackTable::Frames frames = stacks.frames_of(static_cast<uint32_t>(stack));
  for (uint32_t i = 0; i < frames.depth && labels.size() < count; ++i) {
    labels.push_back(frame_label(stacks.frame_address(frames.frame_ids[i]), python));
  }
  return labels;
}

}  // namespace vramshim::oom
