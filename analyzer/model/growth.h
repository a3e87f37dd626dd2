// Which sites grow (vramshim report --growth): from a report's site history (FORMAT.md, "history")
// the sites whose live bytes rise steadily until the report, with their rate; from its trace
// ("trace") the program's repeating allocation pattern, so a rate can be given per step.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// The trace's allocations repeat with this period: the same stacks in the same order.
struct RepeatingPattern {
  int64_t allocations_per_step = 0;
  double step_seconds = 0;
  int64_t steps = 0;  // whole periods found among the allocations searched
  // The trace's most recent allocations, where the steps were searched (at most half of its
  // allocations).
  int64_t allocations_searched = 0;
  size_t first_event = 0;  // the steps span trace events [first_event, end_event)
  size_t end_event = 0;
};

struct GrowingSite {
  size_t site = 0;           // index into Report::sites
  int64_t gained_bytes = 0;  // since `start_time`
  int64_t final_bytes = 0;
  double bytes_per_second = 0;
  // With a repeating pattern: the site's net bytes per step over the steps since start_time.
  std::optional<double> bytes_per_step;
  // R² of a least-squares straight line through the site's live bytes since `start_time` (one
  // value per history slot): 1 grows at an even rate, near 0 does not follow a line.
  double steadiness = 0;
  double start_time = 0;  // the last time the site held as little as at any later time
  // Before start_time the site held as much as it holds at the end: a cycle (memory freed every N
  // steps) that has not passed its earlier height. Never steady.
  bool cyclic = false;
  bool steady = false;  // a site the report's summary calls growing (see growth.cc)
};

struct GrowthAnalysis {
  bool has_history = false;
  // Sites beyond what the history's budget holds (History::untracked_sites): they have no series,
  // so whether they grow cannot be told.
  int64_t untracked_sites = 0;
  std::optional<RepeatingPattern> pattern;
  std::vector<GrowingSite> sites;  // every site that gained, most bytes gained first
};

std::optional<RepeatingPattern> find_repeating_pattern(const Trace& trace);
GrowthAnalysis analyze_growth(const Report& report);
// Of the sites `filter` keeps only (--module, --function). untracked_sites stays the history's
// count: it does not say which sites they are.
GrowthAnalysis analyze_growth(const Report& report, const FrameTable& table,
                              const SiteFilter& filter);

}  // namespace vramshim::analyzer
