// The views of `vramshim report --format json` (docs/cli-json.md, "report"): the members each view
// adds to the document, beside the header (view_json.h) and the out-of-memory sections.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// The ranking of the sites and stacks views: "metric", "ranked_count" (the rows with some of
// `metric`), "sites" (the first `top` of them, 0: all; `rows` sorted by `metric`) and
// "omitted_rows" (ranked rows not listed), as render_top_sites shows them.
void add_ranked_sites(nlohmann::json& document, const FrameTable& table,
                      const std::vector<SiteView>& rows, Metric metric, size_t top);

// The growing sites, as render_growth lists them: {"has_history", "pattern" (null, or
// "allocations_per_step", "step_seconds", "steps"), "sites" (the first `top` steadily growing
// ones, 0: all), "omitted_rows", "unsteady_count" (sites that gained bytes without growing
// steadily)}.
nlohmann::json growth_json(const Report& report, const FrameTable& table,
                           const GrowthAnalysis& analysis, size_t top);

// The call tree view: "metric", "tree" (tree_json of `shown`, within 32 MiB), "omitted_rows": the
// nodes of `whole` (the tree with every node) not written, and "omitted_for_size": those of them
// that `shown` holds but the bound on the output left out.
void add_call_tree(nlohmann::json& document, Metric metric, const CallTree& shown,
                   const CallTree& whole);

}  // namespace vramshim::analyzer
