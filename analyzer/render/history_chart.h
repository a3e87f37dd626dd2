// The HTML page's memory-over-time data: the live bytes of the top site labels and of all others
// at each history slot (FORMAT.md, "history"), for a stacked step chart, and the markers of the
// events the report knows the time of (flushes, trims and out-of-memory failures in the trace, the
// out-of-memory failure of an oom report, the report itself).
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Every time in the page's JSON is in seconds since the process started.
double page_time(const Report& report, double time);

// {"times": [slot times], "series": [{"name", "color", "kind", "stacks", "values"}…] (the top
// labels, most held first, then "other" when any), "labels": how many labels have a series};
// null when the report has no history.
nlohmann::json history_chart_json(const Report& report, const FrameTable& table);

// [{"time", "type" (flush|trim|oom|report), "text"}…], in time order, at most a few hundred.
nlohmann::json markers_json(const Report& report);

}  // namespace vramshim::analyzer
