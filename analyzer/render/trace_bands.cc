#include "analyzer/render/trace_bands.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/render/history_chart.h"
#include "analyzer/render/text_report.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// The summed band of the allocations not drawn keeps this many points at most (the most held in
// each span of time, so that no peak is hidden).
constexpr size_t kOtherPoints = 2000;

struct Lifetime {
  double start = 0;
  double end = -1;  // -1: still live at the report
  int64_t bytes = 0;
  int64_t stack = -1;
};

// The allocations of the window, each with its free where the window has one, in allocation order.
// A free whose allocation came before the window starts at the window's start.
std::vector<Lifetime> lifetimes(const Trace& trace, double window_start, size_t* before) {
  std::vector<Lifetime> out;
  std::unordered_map<uint64_t, size_t> open;  // by address: index into `out`
  for (const TraceEvent& event : trace.events) {
    if (event.type == "alloc") {
      open[event.address] = out.size();
      out.push_back({event.time, -1, event.size, event.stack});
    } else if (event.type == "free") {
      const auto found = open.find(event.address);
      if (found != open.end()) {
        out[found->second].end = event.time;
        open.erase(found);
      } else {
        out.push_back({window_start, event.time, event.size, event.stack});
        ++*before;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Lifetime& a, const Lifetime& b) { return a.start < b.start; });
  return out;
}

// The live bytes of `summed` over time, as [time, bytes] steps, at most kOtherPoints of them.
json summed_steps(const std::vector<const Lifetime*>& summed, double end, const Report& report) {
  std::vector<std::pair<double, int64_t>> changes;
  for (const Lifetime* lifetime : summed) {
    changes.push_back({lifetime->start, lifetime->bytes});
    changes.push_back({lifetime->end < 0 ? end : lifetime->end, -lifetime->bytes});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<double, int64_t>> steps;
  __int128 live = 0;  // exact: it comes back down as blocks are freed
  for (const auto& [time, change] : changes) {
    live += change;
    if (!steps.empty() && steps.back().first == time) {
      steps.back().second = bounded_figure(live);
    } else {
      steps.push_back({time, bounded_figure(live)});
    }
  }
  json points = json::array();
  const size_t per_point = (steps.size() + kOtherPoints - 1) / kOtherPoints;
  for (size_t i = 0; i < steps.size(); i += std::max<size_t>(per_point, 1)) {
    int64_t most = 0;
    for (size_t j = i; j < std::min(steps.size(), i + std::max<size_t>(per_point, 1)); ++j) {
      most = std::max(most, steps[j].second);
    }
    points.push_back({page_time(report, steps[i].first), most});
  }
  if (!steps.empty() && steps.back().second == 0 && !points.empty() && points.back()[1] != 0) {
    points.push_back({page_time(report, steps.back().first), 0});
  }
  return points;
}

}  // namespace

json trace_bands_json(const Report& report, const FrameTable& table, size_t max_bands) {
  if (!report.trace || report.trace->events.empty()) return nullptr;
  const Trace& trace = *report.trace;
  const double start = trace.events.front().time;
  const double end = std::max(report.process.report_time, trace.events.back().time);
  size_t before = 0;
  const std::vector<Lifetime> all = lifetimes(trace, start, &before);
  if (all.empty()) return nullptr;

  // The allocations that cover the most of the chart are drawn: the most bytes × lifetime (so a
  // leak's long-lived blocks win over a step's short churn), the earlier first among equals.
  auto area = [&](const Lifetime& lifetime) {
    return static_cast<double>(lifetime.bytes) *
           ((lifetime.end < 0 ? end : lifetime.end) - lifetime.start);
  };
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return area(all[a]) > area(all[b]); });
  std::vector<bool> drawn(all.size(), false);
  for (size_t i = 0; i < std::min(max_bands, order.size()); ++i) drawn[order[i]] = true;

  json bands = json::array();
  json stacks = json::array();
  std::unordered_map<int64_t, size_t> stack_index;
  // The bands' stacks share frames: each is listed once, the stacks hold indices into the list.
  json frame_names = json::array();
  std::unordered_map<uint32_t, size_t> frame_index;
  std::vector<const Lifetime*> summed;
  std::vector<uint32_t> visible;
  for (size_t i = 0; i < all.size(); ++i) {
    const Lifetime& lifetime = all[i];
    if (!drawn[i]) {
      summed.push_back(&lifetime);
      continue;
    }
    auto [at, added] = stack_index.try_emplace(lifetime.stack, stacks.size());
    if (added) {
      table.visible_stack(lifetime.stack, visible);
      const uint32_t label = table.label(visible);
      const bool named = label != kNoFrame;
      json frames = json::array();
      for (uint32_t id : visible) {
        const auto [known, fresh] = frame_index.try_emplace(id, frame_names.size());
        if (fresh) frame_names.push_back(describe_frame(table.frame(id)));
        frames.push_back(known->second);
      }
      stacks.push_back(
          {{"name", named ? describe_frame(table.frame(label)) : std::string("[no stack]")},
           {"color", named ? tree_label(table.frame(label)) : std::string("[no stack]")},
           {"frames", std::move(frames)}});
    }
    bands.push_back({page_time(report, lifetime.start),
                     lifetime.end < 0 ? json() : json(page_time(report, lifetime.end)),
                     lifetime.bytes, at->second});
  }
  return {{"start", page_time(report, start)},
          {"end", page_time(report, end)},
          {"allocations", all.size()},
          {"before_window", before},
          {"bands", std::move(bands)},
          {"stacks", std::move(stacks)},
          {"frame_names", std::move(frame_names)},
          {"other", summed_steps(summed, end, report)}};
}

}  // namespace vramshim::analyzer
