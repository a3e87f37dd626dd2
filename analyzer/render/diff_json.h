// `vramshim diff --format json` (docs/cli-json.md, "diff"): the totals before and after, then the
// sites that changed, as render_diff shows them.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_diff.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// The document's members after "command": "old" and "new" ({"file", "processes",
// "peak_in_use_bytes", "totals"}), "changed_count", "changes" (the first `top`, 0: all: "status"
// new|gone|changed, "kind", "label", "frames" (to kTextStackFrames, none once kTextStackBytes / 2
// of a report's frames are listed), "omitted_frames", "before", "after", "live_growth_bytes") and
// "omitted_rows".
void add_diff(nlohmann::json& document, const Report& old_report,
              const std::vector<SiteView>& old_sites, const FrameTable& old_table,
              const Report& new_report, const std::vector<SiteView>& new_sites,
              const FrameTable& new_table, const std::vector<SiteChange>& changes, size_t top);

}  // namespace vramshim::analyzer
