// Growing sites as text: the whole list (vramshim report --growth) and the short "growing" section
// of the default summaries.
#pragma once

#include <ostream>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// What --help says of the figures.
inline constexpr const char* kGrowthHelp =
    "List the sites whose live bytes grew steadily until the report (needs the report's history), "
    "most bytes gained first: when the growth began, its rate per second and, when the trace "
    "shows a repeating allocation pattern, per step; steadiness is R^2 of a straight line through "
    "the site's live bytes since it began to grow (1: an even rate; a site must reach 0.8, and "
    "still rise over the last quarter of that time, to count as growing)";

// The steadily growing sites, the first `top` (0: all) with their stacks, and how many more.
void render_growth(std::ostream& out, const Report& report, const FrameTable& table,
                   const GrowthAnalysis& analysis, size_t top);

// "growing:" and a line per steadily growing site (at most `top`, 0: all), then how many more grow
// and `how` to see them all; nothing when none grows.
void render_growing_summary(std::ostream& out, const Report& report, const FrameTable& table,
                            const GrowthAnalysis& analysis, size_t top, const char* how);

}  // namespace vramshim::analyzer
