// The stacks the HTML page lists on a click (a table row's, a growing site's, a chart series'), as
// lines of text, bounded: a report of 844 KB naming 4 KiB functions in stacks of 4,096 frames made
// a page of 1.7 GB (6.6 GB of the analyzer's memory), and one of 174 KB a tab that never rendered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/model/frame_table.h"

namespace vramshim::analyzer {

inline constexpr size_t kListedLineBytes = 512;

// `text` cut to kListedLineBytes at a UTF-8 character boundary, with "…" when cut: a frame's name
// as the views that list many of them show it.
std::string listed_line(std::string text);

// What the text views show for a site with no visible frame: a snapshot's allocations made before
// PyTorch recorded its history have no frames (a model loaded first: 12.7 GiB of 16.4 in one).
std::string no_stack_line(const Report& report);

// The text views (`report --stacks`, `--growth`) list stacks this deep, this much text in all.
inline constexpr size_t kTextStackFrames = 256;
inline constexpr size_t kTextStackBytes = size_t{32} << 20;

class StackLister {
 public:
  static constexpr size_t kListedFrames = 64;

  // Lists at most `budget_bytes` of frame text in all, at most `max_frames` frames a stack.
  StackLister(const FrameTable& table, size_t budget_bytes, size_t max_frames = kListedFrames)
      : table_(table), left_(budget_bytes), max_frames_(max_frames) {}

  // `frames` (visible frame ids, innermost first) as the page shows them: at most `max_frames`
  // lines of at most kListedLineBytes each, then "… N more frames"; once the budget is spent, one
  // line saying the stack was left out.
  std::vector<std::string> lines(const std::vector<uint32_t>& frames);
  nlohmann::json frames(const std::vector<uint32_t>& frames) { return lines(frames); }
  // The visible frames of the report's stack `stack`.
  nlohmann::json stack(int64_t stack);
  // `frames` as frame objects (view_json.h's frame_json, names whole) for the JSON documents: at
  // most `max_frames`, none once the budget is spent; `omitted` gets how many were left out.
  nlohmann::json objects(const std::vector<uint32_t>& frames, size_t& omitted);

 private:
  const FrameTable& table_;
  size_t left_;
  size_t max_frames_;
};

}  // namespace vramshim::analyzer
