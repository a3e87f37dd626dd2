#include "analyzer/render/html_page.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/out_of_memory_sections.h"
#include "analyzer/render/history_chart.h"
#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/out_of_memory_view.h"
#include "analyzer/render/page_assets.h"
#include "analyzer/render/page_policy.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/trace_bands.h"
#include "analyzer/render/tree_json.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// Flame graph nodes smaller than this share of every metric are left out (invisible at any zoom
// that fits a screen, and they would make the page heavy).
constexpr double kFlameMinFraction = 0.0002;
constexpr size_t kTimelinePoints = 2000;
constexpr size_t kTableSites = 100;
// A row of the sites table lists at most this many of the stacks it sums.
constexpr size_t kRowStacks = 20;
// The text of the stacks the page lists (StackLister): the table rows', the growing sites'.
constexpr size_t kRowStackBytes = size_t{16} << 20;
constexpr size_t kGrowingStackBytes = size_t{4} << 20;
// The flame graph's nodes and names (tree_json.h).
constexpr size_t kFlameGraphBytes = size_t{16} << 20;
// The segment map of an out-of-memory panel draws this many segments, the first in address order.
constexpr size_t kMapSegments = 64;

json timeline_json(const std::vector<TimelineSample>& samples) {
  json points = json::array();
  const size_t step = samples.size() > kTimelinePoints
                          ? (samples.size() + kTimelinePoints - 1) / kTimelinePoints
                          : 1;
  for (size_t i = 0; i < samples.size(); i += step) {
    // Keep the largest sample of each bucket so that spikes stay visible.
    size_t best = i;
    for (size_t j = i; j < std::min(i + step, samples.size()); ++j) {
      if (samples[j].in_use_bytes + samples[j].cached_bytes >
          samples[best].in_use_bytes + samples[best].cached_bytes) {
        best = j;
      }
    }
    points.push_back({samples[best].time, samples[best].in_use_bytes, samples[best].cached_bytes});
  }
  return points;
}

// The out-of-memory panels: each section's text as `report` shows it, its explanation, and the
// first segments of the pool for the map.
json out_of_memory_panels(const Report& report, const FrameTable& table) {
  json panels = json::array();
  for (const OutOfMemorySection& section : out_of_memory_sections(report)) {
    std::ostringstream text;
    render_out_of_memory_section(text, report, section, table);
    const OutOfMemory& oom = *section.oom;
    json segments = json::array();
    for (size_t i = 0; i < std::min(kMapSegments, oom.segments.size()); ++i) {
      const PoolSegment& segment = oom.segments[i];
      json blocks = json::array();
      for (const SegmentBlock& b : segment.blocks) {
        if (b.allocated) continue;  // the map draws the free space over the segment
        blocks.push_back({b.offset, b.size, b.pending ? "pending" : "free"});
      }
      segments.push_back(
          {{"base", segment.base}, {"size", segment.size}, {"blocks", std::move(blocks)}});
    }
    panels.push_back(
        {{"title", report.merged() ? "Out of memory in " + describe_process(*section.process)
                                   : std::string("Out of memory")},
         {"explanation", oom.explanation.empty() ? oom.verdict : oom.explanation},
         {"text", text.str()},
         {"segments", std::move(segments)},
         {"segment_count", oom.segments.size()}});
  }
  return panels;
}

// The growing sites table: those `report --growth` lists, with what it says of them.
json growing_json(const Report& report, const FrameTable& table, const GrowthAnalysis& analysis) {
  StackLister lister(table, kGrowingStackBytes);
  json rows = json::array();
  std::vector<uint32_t> visible;
  for (const GrowingSite& site : analysis.sites) {
    if (!site.steady) continue;
    if (rows.size() == kTableSites) break;
    const Site& grown = report.sites[site.site];
    table.visible_stack(grown.stack, visible);
    const uint32_t label = table.label(visible);
    const bool named = label != kNoFrame;
    rows.push_back(
        {{"name", named ? describe_frame(table.frame(label)) : std::string("[no stack]")},
         {"color", named ? tree_label(table.frame(label)) : std::string("[no stack]")},
         {"kind", grown.kind},
         {"gained", site.gained_bytes},
         {"final", site.final_bytes},
         {"per_second", site.bytes_per_second},
         {"per_step", site.bytes_per_step ? json(*site.bytes_per_step) : json()},
         {"steadiness", site.steadiness},
         {"since", page_time(report, site.start_time)},
         {"frames", lister.stack(grown.stack)}});
  }
  json pattern;
  if (analysis.pattern) {
    pattern = {{"allocations_per_step", analysis.pattern->allocations_per_step},
               {"step_seconds", analysis.pattern->step_seconds},
               {"steps", analysis.pattern->steps},
               {"allocations_searched", analysis.pattern->allocations_searched}};
  }
  return {{"has_history", analysis.has_history},
          {"pattern", pattern},
          {"sites", rows},
          {"untracked_sites", analysis.untracked_sites}};
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Writes assets/page.html with each {{name}} in it replaced by values[name].
void fill_page(std::ostream& out, const std::map<std::string_view, std::string_view>& values) {
  std::string_view rest = page_assets::kPageHtml;
  for (size_t open; (open = rest.find("{{")) != std::string_view::npos;) {
    const size_t close = rest.find("}}", open);  // npos: the name runs to the end, found nowhere
    const auto value = values.find(rest.substr(open + 2, close - open - 2));
    if (value == values.end()) throw std::logic_error("assets/page.html: unknown placeholder");
    out << rest.substr(0, open) << value->second;
    rest.remove_prefix(close + 2);
  }
  out << rest;
}

}  // namespace

void render_html(std::ostream& out, const Report& report, const FrameTable& table,
                 const std::vector<SiteView>& sites, const SiteFilter& filter) {
  // One row per label (what the row shows), its stacks one click away; the header counts the rows,
  // as `report`'s does.
  std::vector<SiteView> top = group_by_label(sites);
  std::ostringstream header;
  render_header(header, report, top);
  const std::string title = "vramshim report: " + describe_process(report);

  sort_sites(top, table, Metric::kBytesAtPeak);
  const size_t site_count = top.size();
  if (top.size() > kTableSites) top.resize(kTableSites);
  json site_list = json::array();
  StackLister lister(table, kRowStackBytes);
  for (SiteView& site : top) {
    sort_sites(site.stacks, table, Metric::kBytesAtPeak);
    json stacks = json::array();
    for (size_t i = 0; i < std::min(kRowStacks, site.stacks.size()); ++i) {
      stacks.push_back(lister.frames(site.stacks[i].frames));
    }
    const SiteFigures& f = site.figures;
    site_list.push_back(
        {{"kind", site.kind},
         {"v", {f.bytes_at_peak, f.live_bytes, f.total_count, f.total_bytes}},
         {"live_count", f.live_count},
         {"label", site.label == kNoFrame ? json() : json(describe_frame(table.frame(site.label)))},
         {"stacks", std::move(stacks)},
         {"stack_count", site.stacks.size()}});
  }
  // Live bytes in a report written at exit are leaks: the page opens on them.
  const SiteFigures total = sum_figures(sites);
  bool at_exit = report.reason == "exit";
  if (report.merged()) {
    at_exit = std::all_of(report.merged_from.begin(), report.merged_from.end(),
                          [](const ProcessInfo& p) { return p.reason == "exit"; });
  }
  const GrowthAnalysis growth = analyze_growth(report, table, filter);
  json growing = growing_json(report, table, growth);
  // The view that explains the report best: what grows, else what leaked, else the peak.
  const bool leaked = at_exit && total.live_bytes > 0;
  const char* view = !growing["sites"].empty() ? "growing" : leaked ? "live" : "peak";
  json tree_names;
  TreeJson tree = page_tree_json(build_call_tree(sites, table, kFlameMinFraction), kFlameGraphBytes,
                                 tree_names);
  if (tree.omitted_nodes > 0) {
    header << "flame:    "
           << format_count_of(static_cast<int64_t>(tree.omitted_nodes), "node", "nodes")
           << " of the call tree left out, the deepest (the page's size is bounded)\n";
  }
  const json data = {{"title", title},
                     {"header", header.str()},
                     {"tree", std::move(tree.root)},
                     {"tree_names", std::move(tree_names)},
                     {"timeline", timeline_json(report.timeline)},
                     {"peak_time", report.merged() ? 0.0 : report.peak_time},
                     {"peak_bytes", report.peak_in_use_bytes},
                     {"sites", std::move(site_list)},
                     {"site_count", site_count},
                     {"leaked", leaked},
                     {"view", view},
                     {"growing", std::move(growing)},
                     {"history", history_chart_json(report, table)},
                     {"markers", markers_json(report)},
                     {"trace", trace_bands_json(report, table)},
                     {"oom", out_of_memory_panels(report, table)}};
  // Inside <script>, "</script>" or "<!--" in a string must not end the element: escape every '<'
  // (it can only occur inside JSON strings, where \u003c means the same).
  std::string embedded = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string safe;
  safe.reserve(embedded.size());
  for (char c : embedded) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  const std::string escaped_title = html_escape(title);
  fill_page(out, {{"policy", page_assets::kContentSecurityPolicy},
                  {"title", escaped_title},
                  {"style", page_assets::kPageCss},
                  {"data", safe},
                  {"script", page_assets::kPageJs}});
}

}  // namespace vramshim::analyzer
