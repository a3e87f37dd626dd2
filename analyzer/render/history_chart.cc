#include "analyzer/render/history_chart.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

// The text of the series' stacks the page lists (StackLister).
constexpr size_t kHistoryStackBytes = size_t{4} << 20;

using nlohmann::json;

// Series drawn besides "other": enough to name what matters, few enough to tell apart.
constexpr size_t kSeries = 12;
// Stacks listed for a series on a click.
constexpr size_t kSeriesStacks = 5;
// Markers drawn: the most recent ones when there are more.
constexpr size_t kMarkers = 500;

double rounded(double seconds) { return std::round(seconds * 1000) / 1000; }

struct LabelGroup {
  uint32_t label = kNoFrame;
  std::string kind;
  int64_t most = 0;               // the sum of its sites' most held: which groups get a series
  std::vector<size_t> histories;  // indices into History::sites
};

}  // namespace

double page_time(const Report& report, double time) {
  return rounded(report.process.seconds_since_start(time));
}

json history_chart_json(const Report& report, const FrameTable& table) {
  if (!report.history) return nullptr;
  StackLister lister(table, kHistoryStackBytes);
  const History& history = *report.history;
  const size_t slots = history.slot_times.size();
  std::map<std::pair<uint32_t, std::string>, LabelGroup> groups;
  std::vector<uint32_t> visible;
  for (size_t h = 0; h < history.sites.size(); ++h) {
    const SiteHistory& series = history.sites[h];
    if (series.site < 0 || static_cast<size_t>(series.site) >= report.sites.size()) continue;
    const Site& site = report.sites[static_cast<size_t>(series.site)];
    table.visible_stack(site.stack, visible);
    LabelGroup& group = groups[{table.label(visible), site.kind}];
    group.label = table.label(visible);
    group.kind = site.kind;
    int64_t most = 0;
    for (const HistoryPoint& point : series.points) most = std::max(most, point.max);
    group.most = saturating_add(group.most, most);
    group.histories.push_back(h);
  }
  std::vector<LabelGroup*> ranked;
  for (auto& [key, group] : groups) ranked.push_back(&group);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const LabelGroup* a, const LabelGroup* b) { return a->most > b->most; });

  // Live bytes at each slot's last tick: each point adds its change since the site's previous
  // point at its slot, and the running sum carries the value on.
  auto values_of = [&](const std::vector<size_t>& histories) {
    std::vector<__int128> change(slots, 0);  // exact: the running sum comes back down
    for (size_t h : histories) {
      int64_t previous = 0;
      for (const HistoryPoint& point : history.sites[h].points) {
        if (point.slot < 0 || static_cast<size_t>(point.slot) >= slots) continue;
        change[static_cast<size_t>(point.slot)] += point.last - previous;
        previous = point.last;
      }
    }
    std::vector<int64_t> values(slots, 0);
    __int128 running = 0;
    for (size_t k = 0; k < slots; ++k) values[k] = bounded_figure(running += change[k]);
    return values;
  };

  json series = json::array();
  std::vector<int64_t> shown(slots, 0);
  const size_t drawn = std::min(kSeries, ranked.size());
  for (size_t i = 0; i < drawn; ++i) {
    const LabelGroup& group = *ranked[i];
    const std::vector<int64_t> values = values_of(group.histories);
    for (size_t k = 0; k < slots; ++k) shown[k] = saturating_add(shown[k], values[k]);
    // Its sites' stacks, those that held the most first.
    std::vector<std::pair<int64_t, int64_t>> stacks;  // most held, stack
    for (size_t h : group.histories) {
      int64_t most = 0;
      for (const HistoryPoint& point : history.sites[h].points) most = std::max(most, point.max);
      stacks.push_back({most, report.sites[static_cast<size_t>(history.sites[h].site)].stack});
    }
    std::stable_sort(stacks.begin(), stacks.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    json stack_list = json::array();
    for (size_t s = 0; s < std::min(kSeriesStacks, stacks.size()); ++s) {
      stack_list.push_back(lister.stack(stacks[s].second));
    }
    const bool named = group.label != kNoFrame;
    series.push_back(
        {{"name", named ? describe_frame(table.frame(group.label)) : std::string("[no stack]")},
         {"color", named ? tree_label(table.frame(group.label)) : std::string("[no stack]")},
         {"kind", group.kind},
         {"stacks", std::move(stack_list)},
         {"stack_count", stacks.size()},
         {"values", values}});
  }
  if (ranked.size() > drawn) {
    std::vector<size_t> all;
    for (size_t h = 0; h < history.sites.size(); ++h) all.push_back(h);
    std::vector<int64_t> other = values_of(all);
    for (size_t k = 0; k < slots; ++k) other[k] -= shown[k];
    series.push_back(
        {{"name",
          "other (" + format_count(static_cast<int64_t>(ranked.size() - drawn)) + " sites)"},
         {"color", nullptr},
         {"kind", ""},
         {"stacks", json::array()},
         {"stack_count", 0},
         {"values", other}});
  }
  json times = json::array();
  for (double time : history.slot_times) times.push_back(page_time(report, time));
  return {{"times", std::move(times)},
          {"series", std::move(series)},
          {"labels", ranked.size()},
          {"untracked_sites", history.untracked_sites}};
}

json markers_json(const Report& report) {
  std::vector<json> markers;
  if (report.trace) {
    for (const TraceEvent& event : report.trace->events) {
      if (event.type == "flush" || event.type == "trim") {
        markers.push_back({{"time", page_time(report, event.time)},
                           {"type", event.type},
                           {"text", event.type + ": released " + format_bytes(event.size)}});
      } else if (event.type == "oom") {
        markers.push_back({{"time", page_time(report, event.time)},
                           {"type", "oom"},
                           {"text", "out of memory: " + format_bytes(event.size) + " on device " +
                                        std::to_string(event.device)}});
      }
    }
  }
  // An out-of-memory report's failure, when its trace did not keep it.
  if (report.oom && std::none_of(markers.begin(), markers.end(),
                                 [](const json& marker) { return marker["type"] == "oom"; })) {
    markers.push_back({{"time", page_time(report, report.oom->time)},
                       {"type", "oom"},
                       {"text", "out of memory: " + format_bytes(report.oom->request.bytes)}});
  }
  if (markers.size() > kMarkers) markers.erase(markers.begin(), markers.end() - kMarkers);
  markers.push_back({{"time", page_time(report, report.process.report_time)},
                     {"type", "report"},
                     {"text", "this report (" + report.reason + ")"}});
  std::stable_sort(markers.begin(), markers.end(), [](const json& a, const json& b) {
    return a["time"].get<double>() < b["time"].get<double>();
  });
  return markers;
}

}  // namespace vramshim::analyzer
