// The report's frames, symbolized once and interned by symbolized identity (function, file:line) so
// that stacks can be compared across processes and runs whatever their load addresses.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/report.h"
#include "analyzer/model/symbolizer.h"
#include "shim/support/system_libraries.h"

namespace vramshim::analyzer {

// A frame as shown to the user. One report frame expands to several when it lies in inlined code.
struct DisplayFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty when unknown
  int64_t line = 0;
  std::string module;   // basename of the module; empty for an address outside any module
  uint64_t offset = 0;  // module offset, or the absolute address when there is no module
  bool python = false;
  bool inlined = false;  // inlined into the next (outer) frame
  bool hidden = false;   // matched a hide pattern
  // The group in shim/support/system_libraries.def of the module, else of the function (the CUDA
  // runtime or an allocator linked into the user's binary); of the file for Python lines.
  support::LibraryGroup library = support::LibraryGroup::kUser;

  // The function, or where the code is when the function is unknown ("libfoo.so+0x1234").
  std::string name() const;
  // "file:line" when known, else "libfoo.so+0x1234" for a named native frame of a module; else
  // empty (the name says it all).
  std::string location() const;
  // Identity across reports: function and file:line, never a load address; for a native frame
  // without them, its module's name and the offset in it.
  std::string key() const;
  // Told apart by module offset (key() holds one): the same key is the same code only in the same
  // binary.
  bool known_by_offset() const;
};

// Which frames are hidden: glob patterns matched against a frame's module basename and its
// function.
struct HidePatterns {
  // The CUDA driver and runtime, the shim itself (the fake driver of the tests is a libcuda too),
  // and the frames of a PyTorch snapshot's recorder.
  static std::vector<std::string> defaults();
  std::vector<std::string> patterns;
  bool python_only = false;  // every native frame hidden: Python programs read as Python
  bool matches(const std::string& module, const std::string& function) const;
};

// No display frame: the label of an empty stack.
inline constexpr uint32_t kNoFrame = UINT32_MAX;

class FrameTable {
 public:
  FrameTable(const Report& report, Symbolizer& symbolizer, HidePatterns hide);

  const DisplayFrame& frame(uint32_t id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }
  // Position of a display frame when all are sorted by name, then location: a cheap, deterministic
  // order.
  uint32_t rank(uint32_t id) const { return ranks_[id]; }

  // The stack's display frames, innermost first, without hidden ones; cleared first. An unknown
  // stack
  // (-1, stacks off) is empty.
  void visible_stack(int64_t stack, std::vector<uint32_t>& out) const;
  // The visible display frames of one report frame (several where code was inlined), innermost
  // first: [first, last).
  std::pair<const uint32_t*, const uint32_t*> visible_frames_of(uint32_t report_frame) const {
    return {visible_ids_.data() + visible_begin_[report_frame],
            visible_ids_.data() + visible_begin_[report_frame + 1]};
  }
  // What names a visible stack (innermost first) for the user: its innermost Python line outside
  // the frameworks' files, else its innermost frame outside the code of system_libraries.def, else
  // its innermost Python line, else the frame of the framework's operation
  // (framework_operations.def), else its innermost frame; kNoFrame for an empty stack. The shim's
  // out-of-memory block labels by the same rule.
  uint32_t label(const std::vector<uint32_t>& visible) const;
  // The identity of a report frame (its display frames' keys): equal for the same code in any
  // process.
  std::string identity(uint32_t report_frame) const;
  // Whether a display frame of the report frame is known by module offset: then its identity is
  // the same code only in the same binary.
  bool known_by_offset(uint32_t report_frame) const;

 private:
  uint32_t intern(DisplayFrame frame);

  const Report& report_;
  HidePatterns hide_;
  std::vector<DisplayFrame> frames_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::vector<uint32_t>>
      expansions_;  // display frames of each report frame, innermost first
  std::vector<uint32_t> ranks_;
  // Visible display frames of report frame i: visible_ids_[visible_begin_[i] .. visible_begin_[i +
  // 1]). Flat, because every stack of every site is walked through it.
  std::vector<uint32_t> visible_begin_;
  std::vector<uint32_t> visible_ids_;
};

}  // namespace vramshim::analyzer
