#include "analyzer/render/diff_json.h"

#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/view_json.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

json side_json(const Report& report, const std::vector<SiteView>& sites) {
  return {{"file", report.source},
          {"processes", processes_json(report)},
          {"peak_in_use_bytes", report.peak_in_use_bytes},
          {"totals", figures_json(sum_figures(sites))}};
}

}  // namespace

void add_diff(json& document, const Report& old_report, const std::vector<SiteView>& old_sites,
              const FrameTable& old_table, const Report& new_report,
              const std::vector<SiteView>& new_sites, const FrameTable& new_table,
              const std::vector<SiteChange>& changes, size_t top) {
  const size_t shown = rows_shown(changes.size(), top);
  json list = json::array();
  // Each report's stacks as `report --stacks` lists them, half its budget each.
  StackLister old_lister(old_table, kTextStackBytes / 2, kTextStackFrames);
  StackLister new_lister(new_table, kTextStackBytes / 2, kTextStackFrames);
  for (size_t i = 0; i < shown; ++i) {
    const SiteChange& c = changes[i];
    const SiteView& site = c.new_site != nullptr ? *c.new_site : *c.old_site;
    const FrameTable& table = c.new_site != nullptr ? new_table : old_table;
    StackLister& lister = c.new_site != nullptr ? new_lister : old_lister;
    size_t omitted_frames = 0;
    json frames = lister.objects(site.frames, omitted_frames);
    list.push_back(
        {{"status", c.old_site == nullptr   ? "new"
                    : c.new_site == nullptr ? "gone"
                                            : "changed"},
         {"kind", site.kind},
         {"label", site.label == kNoFrame ? json() : frame_json(table.frame(site.label))},
         {"frames", std::move(frames)},
         {"omitted_frames", omitted_frames},
         {"before", figures_json(c.before)},
         {"after", figures_json(c.after)},
         {"live_growth_bytes", c.live_growth()}});
  }
  document["old"] = side_json(old_report, old_sites);
  document["new"] = side_json(new_report, new_sites);
  document["changed_count"] = changes.size();
  document["changes"] = std::move(list);
  document["omitted_rows"] = changes.size() - shown;
}

}  // namespace vramshim::analyzer
