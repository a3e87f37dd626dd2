#include "analyzer/model/frame_table.h"

#include <fnmatch.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "analyzer/model/ends_with.h"
#include "analyzer/model/shown_name.h"
#include "shim/support/framework_operations.h"

namespace vramshim::analyzer {
namespace {

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex_offset(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

// The shim's frame ending a stack its depth cut (shim/report/FORMAT.md): shown under
// --python-only too, where it says Python frames were left out.
bool marks_a_cut(const Frame& frame) {
  return frame.module < 0 && frame.function == "frames past VRAMSHIM_STACK_DEPTH";
}

// Whether a resolved frame's file is a module's name ("libffi.so.8", "python3.11"), as a
// torch-snapshot export writes for a frame without a source file, rather than a source file.
bool names_a_module(const std::string& file) {
  if (file.empty() || file.find('/') != std::string::npos) return false;
  for (const char* source : {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh"}) {
    if (file.size() > std::strlen(source) && ends_with(file, source)) return false;
  }
  return true;
}

// The group of a native frame shown as `function` in `module` (either empty when unknown): the
// module's, else the function's; for a frame resolved before the report (an imported snapshot's),
// whose file names its module where a torch-snapshot export wrote one without a source file (a
// native report exported and imported again), that module's. The shim's mark of a cut stack is
// no code at all, the user's least of all.
support::LibraryGroup native_group(const Frame& frame, const std::string& module,
                                   const std::string& function) {
  if (marks_a_cut(frame)) return support::LibraryGroup::kShim;
  const support::LibraryGroup group = support::system_code_group(module.c_str(), function.c_str());
  if (group != support::LibraryGroup::kUser || !frame.symbolized || !names_a_module(frame.file)) {
    return group;
  }
  return support::system_library_group(frame.file.c_str());
}

}  // namespace

std::string DisplayFrame::name() const {
  if (!function.empty()) return function;
  if (module.empty()) return hex_offset(offset);
  return module + "+" + hex_offset(offset);
}

std::string DisplayFrame::location() const {
  if (!file.empty()) return line > 0 ? file + ":" + std::to_string(line) : file;
  if (python) return {};
  // A named frame in no module is one of the shim's marks ("frames past VRAMSHIM_STACK_DEPTH", at
  // offset 0) or a frame resolved before the report: it has no place to show.
  if (function.empty() || module.empty()) return {};
  return module + "+" + hex_offset(offset);
}

std::string DisplayFrame::key() const {
  const char sep = '\x1f';
  std::string key;
  if (python) {
    key = "P";
  } else if (!function.empty() && !file.empty()) {
    key = "F";
  } else if (!function.empty()) {
    // Without line information the offset tells a function's call sites apart, as file:line would.
    return std::string("S") + sep + function + sep + module + sep + hex_offset(offset) +
           (inlined ? "\x1fi" : "");
  } else {
    return std::string("A") + sep + module + sep + hex_offset(offset) + sep + file + sep +
           std::to_string(line);
  }
  return key + sep + function + sep + file + sep + std::to_string(line) + (inlined ? "\x1fi" : "");
}

bool DisplayFrame::known_by_offset() const { return !python && (function.empty() || file.empty()); }

std::vector<std::string> HidePatterns::defaults() {
  return {"libcuda.so*", "libcuda-*", "libcudart*", "libvramshim*", "*fakecuda*",
          // The recorder of a PyTorch snapshot taking the stack, innermost in each of its stacks
          // (PyTorch's viewer leaves them out too).
          "torch::unwind::*", "torch::CapturedTraceback::*", "torch::*gather_with_cpp*"};
}

bool HidePatterns::matches(const std::string& module, const std::string& function) const {
  for (const std::string& pattern : patterns) {
    if (!module.empty() && fnmatch(pattern.c_str(), module.c_str(), 0) == 0) return true;
    if (!function.empty() && fnmatch(pattern.c_str(), function.c_str(), 0) == 0) return true;
  }
  return false;
}

FrameTable::FrameTable(const Report& report, Symbolizer& symbolizer, HidePatterns hide)
    : report_(report), hide_(std::move(hide)) {
  expansions_.resize(report.frames.size());
  for (size_t i = 0; i < report.frames.size(); ++i) {
    const Frame& frame = report.frames[i];
    if (frame.python) {
      DisplayFrame shown;
      shown.python = true;
      shown.function = frame.function;
      shown.file = frame.file;
      shown.line = frame.line;
      shown.module = "python";
      shown.library = support::python_file_group(shown.file.c_str());
      shown.hidden = hide_.matches({}, shown.function);
      expansions_[i].push_back(intern(std::move(shown)));
      continue;
    }
    if (frame.symbolized) {  // resolved before the report was written: used as it is
      DisplayFrame shown;
      shown.function = frame.function;
      shown.file = frame.file;
      shown.line = frame.line;
      shown.library = native_group(frame, {}, shown.function);
      shown.hidden =
          (hide_.python_only && !marks_a_cut(frame)) || hide_.matches({}, shown.function);
      expansions_[i].push_back(intern(std::move(shown)));
      continue;
    }
    DisplayFrame base;
    base.offset = frame.offset;
    base.function = demangle(frame.function);
    if (frame.module >= 0) {
      const Module& module = report.modules[static_cast<size_t>(frame.module)];
      base.module = basename_of(module.path);
      // Frames of hidden modules (the driver, the runtime) are never shown: skip their
      // symbolization.
      if (!hide_.python_only && !hide_.matches(base.module, base.function)) {
        for (SourceFrame& source : symbolizer.resolve_return_address(module, frame.offset)) {
          DisplayFrame shown = base;
          if (!source.function.empty()) shown.function = std::move(source.function);
          shown.file = std::move(source.file);
          shown.line = source.line;
          shown.inlined = source.inlined;
          shown.library = native_group(frame, shown.module, shown.function);
          shown.hidden = hide_.python_only || hide_.matches(shown.module, shown.function);
          expansions_[i].push_back(intern(std::move(shown)));
        }
      }
    }
    if (expansions_[i].empty()) {
      base.library = native_group(frame, base.module, base.function);
      base.hidden =
          (hide_.python_only && !marks_a_cut(frame)) || hide_.matches(base.module, base.function);
      expansions_[i].push_back(intern(std::move(base)));
    }
  }
  visible_begin_.reserve(expansions_.size() + 1);
  for (const auto& expansion : expansions_) {
    visible_begin_.push_back(static_cast<uint32_t>(visible_ids_.size()));
    for (uint32_t id : expansion) {
      if (!frames_[id].hidden) visible_ids_.push_back(id);
    }
  }
  visible_begin_.push_back(static_cast<uint32_t>(visible_ids_.size()));
  std::vector<uint32_t> order(frames_.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::pair<std::string, std::string>> labels;
  labels.reserve(frames_.size());
  for (const DisplayFrame& f : frames_) labels.emplace_back(f.name(), f.location());
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return labels[a] < labels[b]; });
  ranks_.resize(frames_.size());
  for (uint32_t i = 0; i < order.size(); ++i) ranks_[order[i]] = i;
}

uint32_t FrameTable::intern(DisplayFrame frame) {
  if (frame.function.size() > kMaxShownNameBytes) frame.function = shown_name(frame.function);
  if (frame.file.size() > kMaxShownNameBytes) frame.file = shown_name(frame.file);
  std::string key = frame.key();
  auto [it, inserted] = ids_.emplace(std::move(key), static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back(std::move(frame));
  return it->second;
}

void FrameTable::visible_stack(int64_t stack, std::vector<uint32_t>& out) const {
  out.clear();
  if (stack < 0) return;
  for (uint32_t report_frame : report_.stacks[static_cast<size_t>(stack)].frames) {
    out.insert(out.end(), visible_ids_.begin() + visible_begin_[report_frame],
               visible_ids_.begin() + visible_begin_[report_frame + 1]);
  }
}

uint32_t FrameTable::label(const std::vector<uint32_t>& visible) const {
  if (visible.empty()) return kNoFrame;
  for (uint32_t id : visible) {
    if (frames_[id].python && frames_[id].library == support::LibraryGroup::kUser) return id;
  }
  for (uint32_t id : visible) {
    if (frames_[id].library == support::LibraryGroup::kUser) return id;
  }
  for (uint32_t id : visible) {
    if (frames_[id].python) return id;
  }
  const size_t operation = support::operation_frame(
      visible.size(), [&](size_t i) -> const std::string& { return frames_[visible[i]].function; });
  return operation < visible.size() ? visible[operation] : visible.front();
}

bool FrameTable::known_by_offset(uint32_t report_frame) const {
  return std::any_of(expansions_[report_frame].begin(), expansions_[report_frame].end(),
                     [&](uint32_t id) { return frames_[id].known_by_offset(); });
}

std::string FrameTable::identity(uint32_t report_frame) const {
  std::string identity;
  for (uint32_t id : expansions_[report_frame]) {
    identity += frames_[id].key();
    identity += '\x1e';
  }
  return identity;
}

}  // namespace vramshim::analyzer
