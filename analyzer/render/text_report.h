// The `report` command's text views of one report: a header of process and device figures and the
// top sites.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// "pid 4242, rank 3, host node17".
std::string describe_process(const ProcessInfo& process);
// How the process's report says a signal ended it: "crashed: SIGSEGV (SEGV_MAPERR) at 0x0 on thread
// 123", "ended by SIGTERM from pid 456 on thread 123"; empty when none did.
std::string describe_ending(const ProcessInfo& process);
// The report's process as above, or "merged from 3 processes".
std::string describe_process(const Report& report);

// Process, capture settings, device figures and totals, one aspect per line.
void render_header(std::ostream& out, const Report& report, const std::vector<SiteView>& sites);

// One frame as a line of text: "function (file:line)", with " [inlined]" when inlined.
std::string describe_frame(const DisplayFrame& frame);

// How many of `sites` have some of `metric`: the rows a ranking by it lists.
size_t ranked_count(const std::vector<SiteView>& sites, Metric metric);
// How many rows of `ranked` a ranking of `top` rows shows; `top` 0: all.
size_t rows_shown(size_t ranked, size_t top);

// The first `top` (0: all) of `sites` (already sorted by `metric`) that have some of `metric`, each
// with its figures and its visible frames (a view by label: the label, and how many stacks it
// sums; stacks listed as StackLister lists them, to kTextStackFrames frames and kTextStackBytes in
// all); says how many sites have none, and how many more were left out (omitted_rows_line).
void render_top_sites(std::ostream& out, const Report& report, const FrameTable& table,
                      const std::vector<SiteView>& sites, Metric metric, size_t top);

}  // namespace vramshim::analyzer
