#include "shim/report/report_writer.h"

#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "shim/oom/verdict.h"
#include "shim/report/atomic_file.h"
#include "shim/report/dynamic_symbols.h"
#include "shim/report/module_map.h"
#include "shim/support/json_writer.h"

namespace vramshim::report {
namespace {

using attribution::SiteFigures;
using attribution::StackTable;
using attribution::TrackerSnapshot;
using support::JsonWriter;

double realtime_seconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// A rank that is a plain non-negative integer is written as a number, anything else as null.
std::optional<uint64_t> numeric_rank(const std::optional<std::string>& rank) {
  if (!rank || rank->empty()) return std::nullopt;
  uint64_t value = 0;
  const auto result = std::from_chars(rank->data(), rank->data() + rank->size(), value);
  if (result.ec != std::errc() || result.ptr != rank->data() + rank->size()) return std::nullopt;
  return value;
}

void write_process(JsonWriter& json, const ProcessInfo& process) {
  json.raw("\"process\": {\"pid\": ").number(static_cast<int64_t>(process.pid));
  json.raw(", \"cmdline\": [");
  for (size_t i = 0; i < process.cmdline.size(); ++i) {
    if (i > 0) json.raw(", ");
    json.string(process.cmdline[i]);
  }
  json.raw("], \"exe\": ").string(process.exe);
  json.raw(", \"host\": ").string(process.host);
  json.raw(", \"rank\": ").number_or_null(numeric_rank(process.rank));
  json.raw(", \"start_time\": ").number(process.start_time);
  json.raw(", \"report_time\": ").number(realtime_seconds());
  json.raw("},\n");
}

void write_crash(JsonWriter& json, const CrashDetails& crash) {
  json.raw(crash.termination ? "\"terminated\": {\"signal\": " : "\"crash\": {\"signal\": ");
  json.number(static_cast<int64_t>(crash.signal));
  json.raw(", \"signal_name\": ").string(crash.signal_name);
  json.raw(", \"code\": ").number(static_cast<int64_t>(crash.code));
  if (crash.termination) {
    json.raw(", \"sender_pid\": ");
    if (crash.sender_pid) {
      json.number(static_cast<int64_t>(*crash.sender_pid));
    } else {
      json.null();
    }
  } else {
    json.raw(", \"address\": ");
    if (crash.address) {
      // A string: an address need not fit in the 53 bits a JSON number holds exactly.
      char hex[2 + 16 + 1];
      std::snprintf(hex, sizeof(hex), "0x%" PRIx64, *crash.address);
      json.string(hex);
    } else {
      json.null();
    }
  }
  json.raw(", \"thread_id\": ").number(static_cast<int64_t>(crash.thread_id));
  json.raw("},\n");
}

// The stack table's budget and what it left out are the tracker's: a report without one has none.
void write_config(JsonWriter& json, const ConfigSummary& config, const StackTable* stacks) {
  json.raw("\"config\": {\"pool\": ").boolean(config.pool);
  json.raw(", \"stacks\": ").string(attribution::stack_mode_name(config.stacks));
  json.raw(", \"sample_bytes\": ").number(config.sample_bytes);
  json.raw(", \"stack_depth\": ").number(static_cast<int64_t>(config.stack_depth));
  json.raw(", \"limit_bytes\": ").number_or_null(config.limit_bytes);
  json.raw(", \"max_cached_bytes\": ").number_or_null(config.max_cached_bytes);
  if (stacks != nullptr) {
    json.raw(", \"stack_table_bytes\": ").number(static_cast<uint64_t>(stacks->budget_bytes()));
    json.raw(", \"allocations_past_stack_table\": ").number(stacks->past_budget_count());
  }
  json.raw("},\n");
}

void write_devices(JsonWriter& json, const std::vector<DeviceFigures>& devices) {
  json.raw("\"devices\": [");
  for (size_t d = 0; d < devices.size(); ++d) {
    json.raw(d > 0 ? ",\n  {\"device\": " : "\n  {\"device\": ");
    json.number(static_cast<int64_t>(devices[d].device));
    for (const auto& [name, value] : devices[d].values) {
      json.raw(", ").string(name).raw(": ").number_or_null(value);
    }
    json.raw('}');
  }
  json.raw("],\n");
}

// Without a tracker there are no frames: the objects loaded now.
StackTable::Modules loaded_now() {
  StackTable::Modules modules{ModuleMap::of_this_process().modules(), {}, 0};
  modules.loaded.assign(modules.loads.size(), true);
  return modules;
}

// Every load a frame may name, the unloaded ones too: with what was read while they were mapped.
void write_modules(JsonWriter& json, const StackTable::Modules& modules) {
  json.raw("\"modules\": [");
  for (size_t m = 0; m < modules.loads.size(); ++m) {
    const LoadedModule& module = modules.loads[m];
    json.raw(m > 0 ? ",\n  {\"id\": " : "\n  {\"id\": ").number(static_cast<uint64_t>(m));
    json.raw(", \"path\": ").string(module.path);
    json.raw(", \"base\": ").number(module.base);
    json.raw(", \"build_id\": ").string(module.build_id);
    json.raw(", \"begin\": ").number(module.begin);
    json.raw(", \"end\": ").number(module.end);
    json.raw(", \"loaded\": ").boolean(modules.loaded[m]);
    json.raw(", \"deleted\": ").boolean(module.deleted);
    json.raw(", \"segments\": [");
    for (size_t s = 0; s < module.segments.size(); ++s) {
      const LoadSegment& segment = module.segments[s];
      json.raw(s > 0 ? ", [" : "[").number(segment.vaddr).raw(", ").number(segment.memsz);
      json.raw(", ").number(segment.filesz).raw(", ").number(segment.offset).raw(']');
    }
    json.raw("]}");
  }
  json.raw("],\n");
}

// Frames are return addresses: the call instruction (whose function dladdr should name) ends just
// before it, which matters when a call is the last instruction of a function. Only frames whose
// own load is still mapped are named: another object may have taken an unloaded one's addresses.
std::vector<std::optional<std::string>> frame_names(const StackTable& stacks,
                                                    const StackTable::Modules& modules) {
  std::vector<std::optional<std::string>> names(modules.frame_count);
  FramesByLoad frames;
  for (size_t f = 0; f < modules.frame_count; ++f) {
    const uint64_t address = stacks.frame_address(static_cast<uint32_t>(f));
    const int32_t module = stacks.frame_module(static_cast<uint32_t>(f));
    if (module < 0 || !modules.loaded[module] || address == 0 || python::is_python_frame(address) ||
        address == StackTable::kOverflowAddress || address == StackTable::kCutAddress) {
      continue;
    }
    const LoadedModule& load = modules.loads[module];
    LoadFrames& of_load = frames[load.base];
    if (of_load.frames.empty()) of_load = {load.loader_name, load.begin, load.end, {}};
    of_load.frames.emplace_back(static_cast<uint32_t>(f), address - 1);
  }
  name_frames(frames, &names);
  return names;
}

void write_frames(JsonWriter& json, const StackTable* stacks, const StackTable::Modules& modules,
                  const python::PythonStacks* python) {
  json.raw("\"frames\": [");
  const size_t count = stacks != nullptr ? modules.frame_count : 0;
  const std::vector<std::optional<std::string>> names =
      count > 0 ? frame_names(*stacks, modules) : std::vector<std::optional<std::string>>{};
  for (size_t f = 0; f < count; ++f) {
    const uint64_t address = stacks->frame_address(static_cast<uint32_t>(f));
    json.raw(f > 0 ? ",\n  {\"id\": " : "\n  {\"id\": ").number(static_cast<uint64_t>(f));
    if (python != nullptr && python::is_python_frame(address)) {
      const python::PythonFrameInfo info = python->describe(address);
      json.raw(", \"python\": true, \"file\": ").string(info.file);
      json.raw(", \"line\": ").number(static_cast<int64_t>(info.line));
      json.raw(", \"function\": ").string(info.function);
    } else if (address == StackTable::kOverflowAddress || address == StackTable::kCutAddress) {
      json.raw(", \"module\": -1, \"offset\": 0, \"function\": ");
      json.string(address == StackTable::kCutAddress ? StackTable::kCutName
                                                     : attribution::kPastStackTableName);
    } else {
      const int32_t module = stacks->frame_module(static_cast<uint32_t>(f));
      const uint64_t offset = module >= 0 ? address - modules.loads[module].base : address;
      json.raw(", \"module\": ").number(static_cast<int64_t>(module));
      json.raw(", \"offset\": ").number(offset);
      json.raw(", \"function\": ");
      if (names[f]) {
        json.string(*names[f]);
      } else {
        json.null();
      }
    }
    json.raw('}');
  }
  json.raw("],\n");
}

void write_stacks(JsonWriter& json, const StackTable* stacks, size_t count) {
  json.raw("\"stacks\": [");
  for (size_t s = 0; s < count; ++s) {
    const StackTable::Frames frames = stacks->frames_of(static_cast<uint32_t>(s));
    json.raw(s > 0 ? ",\n  {\"id\": " : "\n  {\"id\": ").number(static_cast<uint64_t>(s));
    json.raw(", \"frames\": [");
    for (uint32_t i = 0; i < frames.depth; ++i) {
      if (i > 0) json.raw(',');
      json.number(frames.frame_ids[i]);
    }
    json.raw("]}");
  }
  json.raw("],\n");
}

void write_sites(JsonWriter& json, const std::vector<SiteFigures>& sites) {
  json.raw("\"sites\": [");
  for (size_t i = 0; i < sites.size(); ++i) {
    const SiteFigures& site = sites[i];
    json.raw(i > 0 ? ",\n  {\"stack\": " : "\n  {\"stack\": ").number(site.stack);
    json.raw(", \"kind\": \"").raw(attribution::allocation_kind_name(site.kind)).raw('"');
#define VRAMSHIM_SITE_FIGURE(name, ...) json.raw(", \"" #name "\": ").number(site.name);
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
    json.raw('}');
  }
  json.raw("],\n");
}

const char* block_state_name(pool::BlockState state) {
  switch (state) {
    case pool::BlockState::kFree:
      return "free";
    case pool::BlockState::kAllocated:
      return "allocated";
    case pool::BlockState::kPending:
      return "pending";
    case pool::BlockState::kHeld:  // never in a picture: the pool drains its thread caches first
      break;
  }
  return "free";
}

// The stack of the tracker's site `site` (a tag minus one, or an event's site), -1 for none.
int64_t stack_of_site(int64_t site, const std::vector<SiteFigures>& sites) {
  return site >= 0 && static_cast<size_t>(site) < sites.size() ? sites[site].stack : -1;
}

// "segments": every segment of the pools and all its blocks (FORMAT.md, "segments").
void write_segments(JsonWriter& json, const std::vector<pool::SegmentPicture>& segments,
                    const std::vector<SiteFigures>& sites) {
  json.raw("\"segments\": [");
  for (size_t s = 0; s < segments.size(); ++s) {
    const pool::SegmentPicture& segment = segments[s];
    json.raw(s > 0 ? ",\n  {\"device\": " : "\n  {\"device\": ");
    json.number(static_cast<int64_t>(segment.device));
    json.raw(", \"base\": ").number(segment.base);
    json.raw(", \"size\": ").number(segment.size).raw(", \"blocks\": [");
    for (size_t b = 0; b < segment.blocks.size(); ++b) {
      const pool::BlockPicture& block = segment.blocks[b];
      json.raw(b > 0 ? ", [" : "[").number(block.offset).raw(", ").number(block.size);
      json.raw(", \"").raw(block_state_name(block.state)).raw("\", ").number(block.requested);
      json.raw(", ").number(block.tag > 0 ? stack_of_site(block.tag - 1, sites) : -1).raw(']');
    }
    json.raw("]}");
  }
  json.raw("]");
}

void write_out_of_memory(JsonWriter& json, const oom::OutOfMemoryFacts& facts,
                         const std::vector<SiteFigures>& sites) {
  const oom::FailedRequest& request = facts.request;
  const char* cause = request.cause == pool::OutOfMemoryCause::kLimit      ? "limit"
                      : request.cause == pool::OutOfMemoryCause::kTooLarge ? "too_large"
                                                                           : "driver";
  json.raw("\"oom\": {\"request\": {\"bytes\": ").number(request.bytes);
  json.raw(", \"kind\": \"").raw(attribution::allocation_kind_name(request.kind)).raw('"');
  json.raw(", \"device\": ").number(static_cast<int64_t>(request.device));
  json.raw(", \"call\": ").string(oom::call_name(request));
  json.raw(", \"cause\": \"").raw(cause).raw("\", \"stack\": ").number(facts.failing_stack);
  json.raw("},\n  \"time\": ").number(facts.time);
  json.raw(", \"failures\": ").number(facts.failures);
  json.raw(", \"verdict\": \"").raw(oom::verdict_name(oom::judge(facts))).raw('"');
  json.raw(", \"explanation\": ").string(oom::describe(oom::judge(facts), facts));
  json.raw(",\n  \"device_total_bytes\": ").number_or_null(facts.device_total_bytes);
  json.raw(", \"device_free_bytes\": ").number_or_null(facts.device_free_bytes);
  json.raw(", \"held_elsewhere_bytes\": ").number(oom::held_elsewhere_bytes(facts));
  json.raw(",\n  \"in_use_bytes\": ").number(facts.in_use_bytes);
  json.raw(", \"cached_bytes\": ").number(facts.cached_bytes);
  json.raw(", \"reserved_bytes\": ").number(facts.reserved_bytes);
  json.raw(", \"direct_bytes\": ").number(facts.direct_bytes);
  json.raw(", \"limit_bytes\": ").number_or_null(facts.limit_bytes);
  json.raw(",\n  \"pool_free_bytes\": ").number(facts.pool_free_bytes);
  json.raw(", \"pool_largest_free_block\": ").number(facts.pool_largest_free_block);
  json.raw(",\n  \"leading_sites\": [");
  for (size_t i = 0; i < facts.leading_sites.size(); ++i) {
    const oom::LeadingSite& site = facts.leading_sites[i];
    json.raw(i > 0 ? ", {\"stack\": " : "{\"stack\": ").number(site.stack);
    json.raw(", \"kind\": \"").raw(attribution::allocation_kind_name(site.kind)).raw('"');
    json.raw(", \"live_bytes\": ").number(site.live_bytes);
    json.raw(", \"live_count\": ").number(site.live_count).raw('}');
  }
  json.raw("],\n  \"other_processes\": [");
  for (size_t i = 0; i < facts.other_processes.size(); ++i) {
    const oom::OtherProcess& process = facts.other_processes[i];
    json.raw(i > 0 ? ", {\"pid\": " : "{\"pid\": ").number(static_cast<int64_t>(process.pid));
    json.raw(", \"command\": ").string(process.command);
    json.raw(", \"source\": ").string(process.source);
    json.raw(", \"in_use_bytes\": ").number_or_null(process.in_use_bytes);
    json.raw(", \"cached_bytes\": ").number_or_null(process.cached_bytes);
    json.raw(", \"used_bytes\": ").number_or_null(process.used_bytes).raw('}');
  }
  json.raw("],\n  \"unasked\": [");
  for (size_t i = 0; i < facts.unasked.size(); ++i) {
    if (i > 0) json.raw(", ");
    json.string(facts.unasked[i]);
  }
  json.raw("],\n  ");
  write_segments(json, facts.segments, sites);
  json.raw("},\n");
}

void write_history(JsonWriter& json, attribution::SiteHistory* site_history,
                   const std::vector<SiteFigures>& sites) {
  if (site_history == nullptr) return;
  // The last tick is the report's own figures, so every series ends at its site's live bytes.
  std::vector<uint64_t> live(sites.size());
  for (size_t i = 0; i < sites.size(); ++i) live[i] = sites[i].live_bytes;
  site_history->tick(realtime_seconds(), live.data(), live.size());
  const attribution::History history = site_history->read();
  json.raw("\"history\": {\"budget_bytes\": ").number(history.budget_bytes);
  json.raw(", \"ticks\": ").number(history.ticks);
  json.raw(", \"ticks_per_slot\": ").number(history.ticks_per_slot);
  json.raw(", \"untracked_sites\": ").number(static_cast<uint64_t>(history.untracked_sites));
  json.raw(",\n  \"peak\": {\"time\": ").number(history.peak_time);
  json.raw(", \"in_use_bytes\": ").number(history.peak_bytes).raw('}');
  json.raw(",\n  \"slot_times\": [");
  for (size_t i = 0; i < history.slot_times.size(); ++i) {
    if (i > 0) json.raw(i % 8 == 0 ? ",\n    " : ", ");
    json.number(history.slot_times[i]);
  }
  json.raw("],\n  \"sites\": [");
  bool first = true;
  for (const attribution::SiteSeries& series : history.sites) {
    // A site new since the report copied the figures (an allocation on another thread) is not in
    // its "sites": its series waits for the next report.
    if (series.site >= sites.size()) continue;
    json.raw(first ? "\n    {\"site\": " : ",\n    {\"site\": ");
    first = false;
    json.number(static_cast<uint64_t>(series.site));
    json.raw(", \"at_peak\": ").number(series.at_peak).raw(", \"points\": [");
    for (size_t p = 0; p < series.points.size(); ++p) {
      const attribution::HistoryPoint& point = series.points[p];
      json.raw(p > 0 ? ", [" : "[").number(static_cast<uint64_t>(point.slot));
      json.raw(", ").number(point.last).raw(", ").number(point.max).raw(']');
    }
    json.raw("]}");
  }
  json.raw("]},\n");
}

void write_trace(JsonWriter& json, const attribution::EventTrace* trace,
                 const std::vector<SiteFigures>& sites) {
  if (trace == nullptr || !trace->enabled()) return;
  const attribution::TraceWindow window = trace->read();
  json.raw("\"trace\": {\"capacity\": ").number(static_cast<uint64_t>(window.capacity));
  json.raw(", \"recorded\": ").number(window.recorded).raw(", \"events\": [");
  for (size_t i = 0; i < window.events.size(); ++i) {
    const attribution::TraceEvent& event = window.events[i];
    json.raw(i > 0 ? ",\n  [" : "\n  [").number(event.time);
    json.raw(", \"").raw(attribution::event_type_name(event.type)).raw("\", ");
    // A VMM allocation's key is its handle with bit 63 set (runtime/tracked_call.h).
    const uint64_t address = event.address & ~(uint64_t{1} << 63);
    if (address != 0) {
      json.number(address);
    } else {
      json.null();
    }
    json.raw(", ").number(event.size).raw(", ");
    if (event.device >= 0) {
      json.number(static_cast<int64_t>(event.device));
    } else {
      json.null();
    }
    json.raw(", ");
    if (event.stream != 0) {
      json.number(event.stream);
    } else {
      json.null();
    }
    json.raw(", ").number(stack_of_site(event.site, sites)).raw(']');
  }
  json.raw("]},\n");
}

void write_timeline(JsonWriter& json, const attribution::TimelineBuffer* buffer,
                    const std::optional<attribution::TimelineSample>& end) {
  attribution::Timeline timeline =
      buffer != nullptr ? buffer->read() : attribution::Timeline{0, {}};
  if (end && (timeline.samples.empty() || end->time > timeline.samples.back().time)) {
    timeline.samples.push_back(*end);
  }
  json.raw("\"timeline\": {\"interval_ms\": ").number(timeline.interval_ms);
  json.raw(", \"samples\": [");
  for (size_t i = 0; i < timeline.samples.size(); ++i) {
    const attribution::TimelineSample& sample = timeline.samples[i];
    json.raw(i > 0 ? ",\n  [" : "\n  [").number(sample.time);
    json.raw(", ").number(sample.in_use_bytes).raw(", ").number(sample.cached_bytes).raw(']');
  }
  json.raw("]}\n");
}

std::string write_report_or_throw(const std::string& path, const ReportInputs& inputs) {
  // Copy the figures first: the stacks they name are published before the sites that use them.
  TrackerSnapshot snapshot{};
  if (inputs.tracker != nullptr) snapshot = inputs.tracker->snapshot();
  const StackTable* stacks = inputs.tracker != nullptr ? &inputs.tracker->stacks() : nullptr;
  // After the snapshot: every frame of its stacks was interned, with its load, before this.
  const StackTable::Modules modules = stacks != nullptr ? stacks->modules() : loaded_now();

  // A root job's out-of-memory report names other users' processes and their command lines (read
  // from /proc, which may hide them from other users): only its owner reads it.
  const bool names_other_users = inputs.out_of_memory != nullptr && ::geteuid() == 0;
  AtomicFile file(path, names_other_users ? NewFileReaders::kOwnerOnly : NewFileReaders::kEveryone);
  if (!file.error().empty()) return file.error();
  JsonWriter json(file);
  json.raw("{\n\"format\": \"vramshim-report\",\n\"version\": 2,\n\"reason\": ")
      .string(inputs.reason)
      .raw(",\n\"sequence\": ")
      .number(inputs.sequence)
      .raw(",\n");
  if (inputs.crash) write_crash(json, *inputs.crash);
  write_process(json, inputs.process);
  write_config(json, inputs.config, stacks);
  write_devices(json, inputs.devices);
  json.raw("\"peak\": {\"in_use_bytes\": ").number(snapshot.peak_in_use_bytes);
  json.raw(", \"time\": ").number(static_cast<double>(snapshot.peak_time_ns) * 1e-9).raw("},\n");
  write_modules(json, modules);
  write_frames(json, stacks, modules, inputs.python);
  write_stacks(json, stacks, snapshot.stack_count);
  write_sites(json, snapshot.sites);
  if (inputs.out_of_memory != nullptr) {
    write_out_of_memory(json, *inputs.out_of_memory, snapshot.sites);
  }
  write_segments(json, inputs.segments, snapshot.sites);
  json.raw(",\n");
  write_history(json, inputs.history, snapshot.sites);
  write_trace(json, inputs.trace, snapshot.sites);
  write_timeline(json, inputs.timeline, inputs.timeline_end);
  json.raw("}\n");
  return file.commit();
}

}  // namespace

std::string write_report(const std::string& path, const ReportInputs& inputs) {
  try {
    return write_report_or_throw(path, inputs);
  } catch (const std::bad_alloc&) {
    return "out of memory while writing " + path;
  }
}

}  // namespace vramshim::report
