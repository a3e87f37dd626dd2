// The HTML page's view of the trace window (FORMAT.md, "trace") as PyTorch's memory viewer draws
// its active-memory timeline: each allocation a band over its lifetime, stacked without addresses.
// The page lays the bands out (page.js, bandLayout); this picks which to draw and pairs each
// allocation with its free.
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Allocations drawn as bands of their own (those covering the most bytes × lifetime); the others
// are summed into one band at the bottom.
inline constexpr size_t kMaxTraceBands = 1000;

// {"start", "end", "allocations", "bands": [[alloc time, free time or null, bytes, stack
// index]…] (in allocation order), "stacks": [{"name", "color", "frames": indices into
// "frame_names", innermost first}…], "frame_names", "other": [[time,
// bytes]…] (the allocations not drawn, live over time), "before_window": allocations freed in the
// window but made before it (their bands start at the window's start)}; null without a trace or
// with no allocation in it.
nlohmann::json trace_bands_json(const Report& report, const FrameTable& table,
                                size_t max_bands = kMaxTraceBands);

}  // namespace vramshim::analyzer
