// The `diff` command's text: totals before and after, then the sites that changed most.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_diff.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// The first `top` (0: all) of `changes`, each with its stack listed as StackLister lists them (to
// kTextStackFrames frames, kTextStackBytes / 2 of each report's frames in all).
void render_diff(std::ostream& out, const Report& old_report,
                 const std::vector<SiteView>& old_sites, const FrameTable& old_table,
                 const Report& new_report, const std::vector<SiteView>& new_sites,
                 const FrameTable& new_table, const std::vector<SiteChange>& changes, size_t top);

}  // namespace vramshim::analyzer
