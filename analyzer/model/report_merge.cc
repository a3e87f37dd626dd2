#include "analyzer/model/report_merge.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "analyzer/model/figure_sum.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/report_reader.h"

namespace vramshim::analyzer {
namespace {

ProcessInfo process_entry(const Report& input) {
  ProcessInfo p = input.process;
  p.reason = input.reason;
  p.devices = input.devices;
  p.peak_in_use_bytes = input.peak_in_use_bytes;
  p.timeline = input.timeline;
  p.oom = input.oom;
  p.segments = input.segments;
  p.trace = input.trace;
  return p;
}

// Points a process's stack ids (its out-of-memory section's, its segments' and its trace's) at
// the merged report's stacks.
void remap_stacks(ProcessInfo& process, const std::vector<int64_t>& stack_ids) {
  auto remap = [&](int64_t& stack) {
    if (stack >= 0) stack = stack_ids[static_cast<size_t>(stack)];
  };
  if (process.oom) {
    remap(process.oom->request.stack);
    for (LeadingSite& site : process.oom->leading_sites) remap(site.stack);
    for (PoolSegment& segment : process.oom->segments) {
      for (SegmentBlock& block : segment.blocks) remap(block.stack);
    }
  }
  for (PoolSegment& segment : process.segments) {
    for (SegmentBlock& block : segment.blocks) remap(block.stack);
  }
  if (process.trace) {
    for (TraceEvent& event : process.trace->events) remap(event.stack);
  }
}

// `indices`: each device's entry in `sums`, by device number.
void add_device(std::vector<DeviceFigures>& sums, std::unordered_map<int64_t, size_t>& indices,
                const DeviceFigures& d) {
  const auto [index, added] = indices.try_emplace(d.device, sums.size());
  if (added) {
    sums.push_back(d);
    return;
  }
  DeviceFigures& sum = sums[index->second];
  // Sums saturate at kFigureLimit.
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, ...) \
  support::merge_figure(sum.name, d.name, support::FigureMerge::merge, saturating_add);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
}

// The job's timeline: at every sample time of any process, the sum of each process's latest sample.
// The sums are kept exact in 128 bits (a process's drop must take out what it added) and bounded
// as they are stored.
std::vector<TimelineSample> sum_timelines(const std::vector<ProcessInfo>& processes) {
  const auto earlier = [](const auto& a, const auto& b) { return a.time < b.time; };
  struct Change {
    double time;
    __int128 in_use_bytes;
    __int128 cached_bytes;
  };
  std::vector<Change> changes;
  for (size_t p = 0; p < processes.size(); ++p) {
    // The shim samples the wall clock, which may step back: each process's changes are taken in
    // time order, so that no running sum counts a later sample's drop before its rise.
    std::vector<TimelineSample> samples = processes[p].timeline;
    std::stable_sort(samples.begin(), samples.end(), earlier);
    for (size_t i = 0; i < samples.size(); ++i) {
      Change change{samples[i].time, samples[i].in_use_bytes, samples[i].cached_bytes};
      if (i > 0) {
        change.in_use_bytes -= samples[i - 1].in_use_bytes;
        change.cached_bytes -= samples[i - 1].cached_bytes;
      }
      changes.push_back(change);
    }
  }
  std::stable_sort(changes.begin(), changes.end(), earlier);
  std::vector<TimelineSample> sums;
  __int128 in_use = 0, cached = 0;
  for (const Change& change : changes) {
    in_use += change.in_use_bytes;
    cached += change.cached_bytes;
    const TimelineSample running{change.time, bounded_figure(in_use), bounded_figure(cached)};
    if (!sums.empty() && sums.back().time == change.time) {
      sums.back() = running;
    } else {
      sums.push_back(running);
    }
  }
  return sums;
}

}  // namespace

size_t ReportMerger::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  size_t h = 0xcbf29ce484222325ULL;
  for (uint32_t x : v) h = (h ^ x) * 0x100000001b3ULL;
  return h;
}

ReportMerger::ReportMerger(Symbolizer& symbolizer, bool keep_events)
    : symbolizer_(symbolizer), keep_events_(keep_events) {
  merged_.version = kReportVersion;
  merged_.reason = "merge";
  merged_.process.start_time = std::numeric_limits<double>::max();
}

std::vector<int64_t> ReportMerger::intern_stacks(const Report& input) {
  std::vector<int64_t> module_ids(input.modules.size());
  for (size_t i = 0; i < input.modules.size(); ++i) {
    const Module& m = input.modules[i];
    auto [it, inserted] = modules_.emplace(std::make_pair(m.path, m.build_id),
                                           static_cast<uint32_t>(merged_.modules.size()));
    if (inserted) merged_.modules.push_back(m);
    module_ids[i] = it->second;
  }
  // Hidden (driver, runtime) modules are not symbolized; their frames are known by dladdr name.
  const FrameTable table(input, symbolizer_, HidePatterns{HidePatterns::defaults()});
  std::vector<uint32_t> frame_ids(input.frames.size());
  for (size_t i = 0; i < input.frames.size(); ++i) {
    Frame frame = input.frames[i];
    if (frame.module >= 0) frame.module = module_ids[static_cast<size_t>(frame.module)];
    std::string key = table.identity(static_cast<uint32_t>(i));
    // Code known by module offset (no line information) is the same code only in the same binary.
    if (frame.module >= 0 && table.known_by_offset(static_cast<uint32_t>(i))) {
      key += '\x1d' + std::to_string(frame.module);
    }
    auto [it, inserted] =
        frames_.emplace(std::move(key), static_cast<uint32_t>(merged_.frames.size()));
    if (inserted) merged_.frames.push_back(std::move(frame));
    frame_ids[i] = it->second;
  }
  std::vector<int64_t> stack_ids(input.stacks.size());
  for (size_t i = 0; i < input.stacks.size(); ++i) {
    std::vector<uint32_t> ids;
    ids.reserve(input.stacks[i].frames.size());
    for (uint32_t f : input.stacks[i].frames) ids.push_back(frame_ids[f]);
    auto [it, inserted] = stacks_.emplace(ids, static_cast<uint32_t>(merged_.stacks.size()));
    if (inserted) merged_.stacks.push_back({std::move(ids)});
    stack_ids[i] = it->second;
  }
  return stack_ids;
}

void ReportMerger::add(const Report& input) {
  // Processes of this input, in merged_from numbering.
  const auto first_process = static_cast<int64_t>(merged_.merged_from.size());
  if (input.merged()) {
    merged_.merged_from.insert(merged_.merged_from.end(), input.merged_from.begin(),
                               input.merged_from.end());
  } else {
    merged_.merged_from.push_back(process_entry(input));
  }
  if (!keep_events_) {
    for (size_t i = static_cast<size_t>(first_process); i < merged_.merged_from.size(); ++i) {
      merged_.merged_from[i].segments.clear();
      merged_.merged_from[i].trace.reset();
    }
  }
  const int64_t past_stack_table = merged_.config.allocations_past_stack_table;
  if (merged_.process.cmdline.empty()) {
    merged_.process.cmdline = input.process.cmdline;
    merged_.process.exe = input.process.exe;
    merged_.config = input.config;
  }
  merged_.config.allocations_past_stack_table =
      saturating_add(past_stack_table, input.config.allocations_past_stack_table);
  merged_.process.start_time = std::min(merged_.process.start_time, input.process.start_time);
  merged_.process.report_time = std::max(merged_.process.report_time, input.process.report_time);
  for (const DeviceFigures& d : input.devices) add_device(merged_.devices, device_indices_, d);
  merged_.peak_in_use_bytes = saturating_add(merged_.peak_in_use_bytes, input.peak_in_use_bytes);
  merged_.peak_time = std::max(merged_.peak_time, input.peak_time);
  merged_.timeline_interval_ms = std::max(merged_.timeline_interval_ms, input.timeline_interval_ms);

  const std::vector<int64_t> stack_ids = intern_stacks(input);
  for (size_t p = static_cast<size_t>(first_process); p < merged_.merged_from.size(); ++p) {
    remap_stacks(merged_.merged_from[p], stack_ids);
  }
  // One entry per process (FORMAT.md): two of its stacks that are one site here add up. Each
  // (merged site, process) share of this input, by its index in the site's ranks; the entries of
  // earlier inputs are other processes'.
  std::map<std::pair<size_t, int64_t>, size_t> shares_of_input;
  for (const Site& site : input.sites) {
    const int64_t stack = site.stack >= 0 ? stack_ids[static_cast<size_t>(site.stack)] : -1;
    auto [it, inserted] = sites_.emplace(std::make_pair(stack, site.kind), merged_.sites.size());
    if (inserted) {
      Site fresh;
      fresh.stack = stack;
      fresh.kind = site.kind;
      merged_.sites.push_back(std::move(fresh));
    }
    const size_t into_index = it->second;
    Site& into = merged_.sites[into_index];
    RankFigures whole;  // a single process's report: its one share is the whole site
#define VRAMSHIM_SITE_FIGURE(name, ...)             \
  into.name = saturating_add(into.name, site.name); \
  whole.name = site.name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
    std::vector<RankFigures> shares = input.merged() ? site.ranks : std::vector<RankFigures>{whole};
    for (RankFigures& share : shares) {
      share.process += first_process;
      const auto [known, added] =
          shares_of_input.try_emplace({into_index, share.process}, into.ranks.size());
      if (added) {
        into.ranks.push_back(share);
        continue;
      }
      RankFigures& same = into.ranks[known->second];
#define VRAMSHIM_SITE_FIGURE(name, ...) same.name = saturating_add(same.name, share.name);
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
    }
  }
}

bool ReportMerger::add_out_of_memory(const Report& input) {
  // Each out-of-memory section of `input` that a process merged already lacks, by that process's
  // index in merged_from.
  std::vector<std::pair<size_t, const OutOfMemory*>> kept;
  auto keep = [&](const ProcessInfo& process, const std::optional<OutOfMemory>& oom) {
    if (!oom) return;
    for (size_t i = 0; i < merged_.merged_from.size(); ++i) {
      const ProcessInfo& into = merged_.merged_from[i];
      if (!into.oom && into.host == process.host && into.pid == process.pid &&
          into.start_time == process.start_time) {
        kept.emplace_back(i, &*oom);
        return;
      }
    }
  };
  if (input.merged()) {
    for (const ProcessInfo& process : input.merged_from) keep(process, process.oom);
  } else {
    keep(input.process, input.oom);
  }
  if (kept.empty()) return false;
  const std::vector<int64_t> stack_ids = intern_stacks(input);
  for (const auto& [index, oom] : kept) {
    ProcessInfo carrier;
    carrier.oom = *oom;
    remap_stacks(carrier, stack_ids);
    merged_.merged_from[index].oom = std::move(carrier.oom);
  }
  return true;
}

Report ReportMerger::finish() {
  if (merged_.merged_from.empty()) merged_.process.start_time = 0;
  std::string host;
  for (const ProcessInfo& p : merged_.merged_from) {
    if (host.empty()) host = p.host;
    if (host != p.host) host = "several hosts";
  }
  merged_.process.host = host;
  merged_.timeline = sum_timelines(merged_.merged_from);
  return std::move(merged_);
}

}  // namespace vramshim::analyzer
