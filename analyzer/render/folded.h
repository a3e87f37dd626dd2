// Sites as folded stacks, the input of flamegraph.pl and speedscope.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// Deep stacks of long names made 820 MB of folded stacks from a report of 453 KB: the lines stop
// at this many bytes.
inline constexpr size_t kFoldedBytes = size_t{32} << 20;

// One "outer;...;inner value" line per distinct stack with a non-zero value, names cut to
// kListedLineBytes; lines sorted. The stacks holding the most come first to the budget: those past
// it are summed into one line "[N more stacks left out: the output is bounded] value".
void render_folded(std::ostream& out, const std::vector<SiteView>& sites, const FrameTable& table,
                   Metric metric, size_t budget_bytes = kFoldedBytes);

}  // namespace vramshim::analyzer
