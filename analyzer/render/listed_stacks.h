// The stacks the HTML page lists on a click (a table row's, a growing site's, a chart series'), as
// lines of text, bounded: a report of 844 KB naming 4 KiB functions in stacks of 4,096 frames made
// a page of 1.7 GB (6.6 GB of the analyzer's memory), and one of 174 KB a tab that never rendered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/model/frame_table.h"

namespace vramshim::analyzer {

class StackLister {
 public:
  static constexpr size_t kListedFrames = 64;
  static constexpr size_t kListedLineBytes = 512;

  // Lists at most `budget_bytes` of frame text in all.
  StackLister(const FrameTable& table, size_t budget_bytes) : table_(table), left_(budget_bytes) {}

  // `frames` (visible frame ids, innermost first) as the page shows them: at most kListedFrames
  // lines of at most kListedLineBytes each, then "… N more frames"; once the budget is spent, one
  // line saying the stack was left out.
  nlohmann::json frames(const std::vector<uint32_t>& frames);
  // The visible frames of the report's stack `stack`.
  nlohmann::json stack(int64_t stack);

 private:
  const FrameTable& table_;
  size_t left_;
};

}  // namespace vramshim::analyzer
