// Sites as folded stacks, the input of flamegraph.pl and speedscope.
#pragma once

#include <ostream>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// One "outer;...;inner value" line per distinct stack with a non-zero value; lines sorted.
void render_folded(std::ostream& out, const std::vector<SiteView>& sites, const FrameTable& table,
                   Metric metric);

}  // namespace vramshim::analyzer
