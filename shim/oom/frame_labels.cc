#include "shim/oom/frame_labels.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "shim/attribution/stack_table.h"
#include "shim/attribution/stack_table_budget.h"
#include "shim/python/python_frame_tag.h"
#include "shim/support/framework_operations.h"
#include "shim/support/system_libraries.h"

namespace vramshim::oom {
namespace {

constexpr size_t kMaxLabel = 100;

std::string demangled_whole(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && text != nullptr ? text : name;
  std::free(text);
  return result;
}

// As a label shows it: cut at kMaxLabel characters.
std::string demangled(const char* name) {
  std::string result = demangled_whole(name);
  if (result.size() > kMaxLabel) result = result.substr(0, kMaxLabel - 3) + "...";
  return result;
}

// Frames of the interpreter, libffi, the C and C++ runtimes, the CUDA libraries and the frameworks'
// allocators name no user code (shim/support/system_libraries.def), by module or, for code linked
// into the user's binaries, by function.
bool in_system_library(const FrameName* name) {
  if (name == nullptr) return false;
  const char* slash = std::strrchr(name->module.c_str(), '/');
  const char* module = slash != nullptr ? slash + 1 : name->module.c_str();
  const std::string function = name->symbol ? demangled_whole(name->symbol->c_str()) : "";
  return support::system_code_group(module, function.c_str()) != support::LibraryGroup::kUser;
}

std::string module_and_offset(uint64_t address, const FrameName* name) {
  char text[64];
  if (name != nullptr) {
    const char* slash = std::strrchr(name->module.c_str(), '/');
    std::snprintf(text, sizeof(text), "+0x%llx",
                  static_cast<unsigned long long>(address - name->base));
    return std::string(slash != nullptr ? slash + 1 : name->module.c_str()) + text;
  }
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

bool is_native(uint64_t frame) {
  return frame != 0 && frame != attribution::StackTable::kOverflowAddress &&
         frame != attribution::StackTable::kCutAddress && !python::is_python_frame(frame);
}

}  // namespace

FrameNames frame_names_of(const attribution::StackTable& stacks, const std::vector<int32_t>& ids) {
  std::vector<uint64_t> frames;
  for (const int32_t stack : ids) {
    if (stack < 0 || static_cast<size_t>(stack) >= stacks.stack_count()) continue;
    const attribution::StackTable::Frames stack_frames =
        stacks.frames_of(static_cast<uint32_t>(stack));
    for (uint32_t i = 0; i < stack_frames.depth; ++i) {
      const uint64_t frame = stacks.frame_address(stack_frames.frame_ids[i]);
      if (is_native(frame)) frames.push_back(frame);
    }
  }
  return FrameNames(std::move(frames));
}

std::string frame_label(uint64_t frame, const python::PythonStacks* python,
                        const FrameNames& names) {
  if (frame == attribution::StackTable::kOverflowAddress) return attribution::kPastStackTableName;
  if (frame == attribution::StackTable::kCutAddress) return attribution::StackTable::kCutName;
  if (python::is_python_frame(frame)) {
    if (python == nullptr) return "(Python frame)";
    const python::PythonFrameInfo info = python->describe(frame);
    return info.file + ":" + std::to_string(info.line) + " " + info.function;
  }
  const FrameName* name = names.find(frame);
  if (name != nullptr && name->symbol) return demangled(name->symbol->c_str());
  return module_and_offset(frame, name);
}

std::string site_label(const attribution::StackTable& stacks, const python::PythonStacks* python,
                       int32_t stack, const FrameNames& names) {
  if (stack < 0 || static_cast<size_t>(stack) >= stacks.stack_count()) return "(no stack)";
  const attribution::StackTable::Frames frames = stacks.frames_of(static_cast<uint32_t>(stack));
  if (frames.depth == 0) return "(no stack)";
  // The innermost Python line outside the frameworks' own files.
  uint64_t first_python = 0;
  for (uint32_t i = 0; i < frames.depth; ++i) {
    const uint64_t frame = stacks.frame_address(frames.frame_ids[i]);
    if (!python::is_python_frame(frame)) continue;
    if (first_python == 0) first_python = frame;
    if (python == nullptr || support::python_file_group(python->describe(frame).file.c_str()) ==
                                 support::LibraryGroup::kUser) {
      return frame_label(frame, python, names);
    }
  }
  // The innermost native frame of the program's own code: named if it can be, else module+offset.
  uint64_t first_own = 0;
  for (uint32_t i = 0; i < frames.depth; ++i) {
    const uint64_t frame = stacks.frame_address(frames.frame_ids[i]);
    if (!is_native(frame)) continue;  // a Python line, or the mark of a cut stack
    const FrameName* name = names.find(frame);
    if (in_system_library(name)) continue;
    if (name != nullptr && name->symbol) return frame_label(frame, python, names);
    if (first_own == 0) first_own = frame;
  }
  if (first_own != 0) return frame_label(first_own, python, names);
  if (first_python != 0) return frame_label(first_python, python, names);
  // None: a framework's own code allocated (a backward pass); its operation says what for.
  const size_t operation = support::operation_frame(frames.depth, [&](size_t i) {
    const FrameName* name = names.find(stacks.frame_address(frames.frame_ids[i]));
    // Whole, as the analyzer reads it: a node's "::apply(" may lie past the label's cut.
    return name != nullptr && name->symbol ? demangled_whole(name->symbol->c_str()) : std::string();
  });
  return frame_label(
      stacks.frame_address(frames.frame_ids[operation < frames.depth ? operation : 0]), python,
      names);
}

std::vector<std::string> first_frames(const attribution::StackTable& stacks,
                                      const python::PythonStacks* python, int32_t stack,
                                      size_t count, const FrameNames& names) {
  std::vector<std::string> labels;
  if (stack < 0 || static_cast<size_t>(stack) >= stacks.stack_count()) return labels;
  const attribution::StackTable::Frames frames = stacks.frames_of(static_cast<uint32_t>(stack));
  for (uint32_t i = 0; i < frames.depth && labels.size() < count; ++i) {
    labels.push_back(frame_label(stacks.frame_address(frames.frame_ids[i]), python, names));
  }
  return labels;
}

}  // namespace vramshim::oom
