// Sites as the user sees them: symbolized, with hidden frames dropped, and sites that look the same
// in a view summed into one: by visible stack (same code, same kind) for views that show stacks, by
// label (FrameTable::label, and kind) for views that show one line per site.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// What a ranking sorts by.
enum class Metric {
  kBytesAtPeak,  // what each site held when its device was at its peak (the default)
  kLiveBytes,    // still allocated when the report was written: leaks at exit
  kAllocations,  // number of allocations made
  kTotalBytes,   // bytes ever allocated
};

const char* metric_name(
    Metric metric);  // "bytes_at_peak", "live_bytes", "total_count", "total_bytes"
const char* metric_title(Metric metric);  // "bytes at peak", "live bytes", ...
bool metric_is_bytes(Metric metric);

// The figures of shim/support/site_figures.def, of a site view or of one process's share of it.
struct SiteFigures {
#define VRAMSHIM_SITE_FIGURE(name, ...) int64_t name = 0;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE

  int64_t value(Metric metric) const;
  void add(const SiteFigures& other);  // each sum saturating at kFigureLimit
};

SiteFigures figures_of(const Site& site);
SiteFigures figures_of(const RankFigures& rank);

struct RankShare {
  int64_t process = 0;  // index into Report::merged_from
  SiteFigures figures;
};

struct SiteView {
  std::vector<uint32_t> frames;  // visible display frames, innermost first; by label: the label
  uint32_t label = kNoFrame;     // what names the site (FrameTable::label)
  std::string kind;
  SiteFigures figures;
  std::vector<RankShare> ranks;  // merged reports: per process, in merged_from order
  std::vector<SiteView> stacks;  // a view by label: the views by stack it sums
};

// Keeps only sites with a visible frame in a module matching `module` and one whose function
// matches `function`; empty filters match everything. A pattern with glob characters is matched as
// a glob, otherwise as a substring.
struct SiteFilter {
  std::string module;
  std::string function;
};

// Whether the filter keeps a site of this stack (its visible frames; -1: none).
bool filter_keeps(const SiteFilter& filter, const FrameTable& table, int64_t stack);

// Views by visible stack.
std::vector<SiteView> collect_sites(const Report& report, const FrameTable& table,
                                    const SiteFilter& filter = {});

// Views by label and kind, each holding the views by stack of `by_stack` it sums.
std::vector<SiteView> group_by_label(std::vector<SiteView> by_stack);

// Orders by metric (largest first), ties broken by the stacks' text so output is deterministic.
void sort_sites(std::vector<SiteView>& sites, const FrameTable& table, Metric metric);

SiteFigures sum_figures(const std::vector<SiteView>& sites);

}  // namespace vramshim::analyzer
