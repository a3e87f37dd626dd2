// `vramshim html`: one self-contained page with the out-of-memory panel of an out-of-memory report,
// a flame graph, the memory timeline, the top sites and the process and device figures.
#pragma once

#include <ostream>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// `sites` as collected (any order), by `filter`, which the growing sites are chosen by too. Embeds
// the data as JSON and renders it with an inline script.
void render_html(std::ostream& out, const Report& report, const FrameTable& table,
                 const std::vector<SiteView>& sites, const SiteFilter& filter = {});

}  // namespace vramshim::analyzer
