#include "analyzer/render/report_summary.h"

#include "analyzer/model/frame_table.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/growth_text.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

void render_ranking(std::ostream& out, std::vector<SiteView>& sites, const FrameTable& table,
                    Metric metric, size_t top, const char* title) {
  sort_sites(sites, table, metric);
  const size_t ranked = ranked_count(sites, metric);
  const size_t shown = rows_shown(ranked, top);
  if (shown > 0) out << title << '\n';
  for (size_t i = 0; i < shown; ++i) {
    const SiteView& site = sites[i];
    std::string figure = format_bytes(site.figures.value(metric));
    if (figure.size() < 11) figure.insert(0, 11 - figure.size(), ' ');
    out << figure << "  "
        << (site.label == kNoFrame ? std::string("[no stack]")
                                   : describe_frame(table.frame(site.label)))
        << '\n';
  }
  if (shown < ranked) {
    out << "           ("
        << format_count_of(static_cast<int64_t>(ranked - shown), "more site", "more sites")
        << ")\n";
  }
}

}  // namespace

void render_summary(std::ostream& out, const std::string& path, size_t top) {
  const Report report = read_report(path);
  Symbolizer symbolizer;
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  // One line per site: sites are grouped by the frame the line shows.
  std::vector<SiteView> sites = group_by_label(collect_sites(report, table));
  render_header(out, report, sites);
  render_ranking(out, sites, table, Metric::kBytesAtPeak, top, "held at the peak:");
  render_ranking(out, sites, table, Metric::kLiveBytes, top,
                 "still allocated at the end (leaks?):");
  const GrowthAnalysis growth = analyze_growth(report);
  render_growing_summary(out, report, table, growth, top, "vramshim report --growth lists them");
  out << "details:  vramshim report " << path << " [--leaks|--tree|--growth]; vramshim html "
      << path << " -o report.html\n";
}

}  // namespace vramshim::analyzer
