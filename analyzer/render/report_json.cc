#include "analyzer/render/report_json.h"

#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/tree_json.h"
#include "analyzer/render/view_json.h"

namespace vramshim::analyzer {

using nlohmann::json;

namespace {

// The tree's nodes and names (tree_json.h).
constexpr size_t kTreeJsonBytes = size_t{32} << 20;

}  // namespace

void add_ranked_sites(json& document, const FrameTable& table, const std::vector<SiteView>& rows,
                      Metric metric, size_t top) {
  const size_t ranked = ranked_count(rows, metric);
  const size_t shown = rows_shown(ranked, top);
  json list = json::array();
  StackLister lister(table, kTextStackBytes, kTextStackFrames);
  for (size_t i = 0; i < shown; ++i) list.push_back(site_json(table, rows[i], lister));
  document["metric"] = metric_name(metric);
  document["ranked_count"] = ranked;
  document["sites"] = std::move(list);
  document["omitted_rows"] = ranked - shown;
}

json growth_json(const Report& report, const FrameTable& table, const GrowthAnalysis& analysis,
                 size_t top) {
  json pattern;
  if (analysis.pattern) {
    pattern = {{"allocations_per_step", analysis.pattern->allocations_per_step},
               {"step_seconds", analysis.pattern->step_seconds},
               {"steps", analysis.pattern->steps},
               {"allocations_searched", analysis.pattern->allocations_searched}};
  }
  json list = json::array();
  size_t steady = 0;
  std::vector<uint32_t> frames;
  StackLister lister(table, kTextStackBytes, kTextStackFrames);
  for (const GrowingSite& site : analysis.sites) {
    if (!site.steady) continue;
    ++steady;
    if (top != 0 && list.size() == top) continue;
    const Site& recorded = report.sites[site.site];
    table.visible_stack(recorded.stack, frames);
    const uint32_t label = table.label(frames);
    size_t omitted_frames = 0;
    json listed = lister.objects(frames, omitted_frames);
    list.push_back(
        {{"kind", recorded.kind},
         {"label", label == kNoFrame ? json() : frame_json(table.frame(label))},
         {"frames", std::move(listed)},
         {"omitted_frames", omitted_frames},
         {"gained_bytes", site.gained_bytes},
         {"final_bytes", site.final_bytes},
         {"bytes_per_second", site.bytes_per_second},
         {"bytes_per_step", site.bytes_per_step ? json(*site.bytes_per_step) : json()},
         {"steadiness", site.steadiness},
         {"start_seconds_after_start",
          report.process.start_time > 0 ? json(report.process.seconds_since_start(site.start_time))
                                        : json()}});
  }
  return {{"has_history", analysis.has_history},
          {"pattern", std::move(pattern)},
          {"sites", list},
          {"omitted_rows", steady - list.size()},
          {"unsteady_count", analysis.sites.size() - steady},
          {"untracked_count", analysis.untracked_sites}};
}

void add_call_tree(json& document, Metric metric, const CallTree& shown, const CallTree& whole) {
  TreeJson tree = tree_json(shown, kTreeJsonBytes);
  document["metric"] = metric_name(metric);
  document["tree"] = std::move(tree.root);
  document["omitted_rows"] = count_nodes(whole.root) - count_nodes(shown.root) + tree.omitted_nodes;
  document["omitted_for_size"] = tree.omitted_nodes;
}

}  // namespace vramshim::analyzer
