#include "analyzer/model/torch_snapshot_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "analyzer/model/ends_with.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/shown_name.h"
#include "analyzer/model/torch_snapshot_fields.h"
#include "analyzer/model/torch_snapshot_oom.h"

namespace vramshim::analyzer {
namespace {

using Kind = PickleValue::Kind;
using torch_snapshot::Action;
using torch_snapshot::check_dict;
using torch_snapshot::fail;
using torch_snapshot::flag_field;
using torch_snapshot::hex;
using torch_snapshot::list_field;
using torch_snapshot::text_field;

// The shim's own spacing of history ticks and timeline samples, and its bound on history slots.
constexpr double kTickSeconds = 0.1;
constexpr int64_t kMaxSlots = 4096;

// The most blocks the segments may list in all, a shared list counted each time it is listed.
// Snapshots of real runs list tens of thousands; every block becomes one of the report's, which
// the import writes and the reader parses again (a million of them: a report of tens of megabytes).
constexpr uint64_t kMaxBlocks = 1'000'000;

// The int `key` of a dict, which the report takes as a figure, an address or a number: there, not
// negative, and within the reader's bound, so that the report an import writes is one the reader
// takes and sums of such ints only saturate.
int64_t report_field(const PickleValue& entry, const char* key, const std::string& where) {
  const uint64_t value = torch_snapshot::field(entry, key, where);
  if (value > static_cast<uint64_t>(kFigureLimit)) {
    fail(where, std::string("\"") + key + "\" is " + std::to_string(value) +
                    ", more than a report holds (" + std::to_string(kFigureLimit) + ")");
  }
  return static_cast<int64_t>(value);
}

// The same for an optional field: `fallback` when absent.
int64_t optional_report_field(const PickleValue& entry, const char* key, const std::string& where,
                              int64_t fallback) {
  return entry.find(key) == nullptr ? fallback : report_field(entry, key, where);
}

// A frame's "line": an int, 0 (unknown) when it is not a line number. CPython gives -1 for code
// without a line (the cleanup after `except ... as e`, which may free tensors), which PyTorch
// writes unsigned as 2^64 - 1 (saturated by the pickle reader), or as -1 from its C++ API.
int64_t line_of(const PickleValue& frame, const std::string& where) {
  const PickleValue* line = frame.find("line");
  if (line == nullptr) fail(where, "has no \"line\"");
  if (!line->is(Kind::kInt))
    fail(where, std::string("\"line\" is a ") + line->kind_name() + ", not an int");
  const int64_t value = line->integer();
  return value >= 0 && value <= std::numeric_limits<int32_t>::max() ? value : 0;
}

// A live allocation of the trace, by device and address.
struct LiveAllocation {
  int64_t size = 0;
  int64_t stack = -1;
  bool free_requested = false;
};

// The figures the trace walk keeps per site.
struct SiteState {
  int64_t live_bytes = 0;
  int64_t live_count = 0;
};

class Importer {
 public:
  explicit Importer(std::string source) { report_.source = std::move(source); }

  Report run(const PickleValue& snapshot) {
    // torch.cuda.memory_snapshot() gives the segments alone, a list (its viewer takes those too).
    const bool segments_alone = snapshot.is(Kind::kList);
    if (!segments_alone && !snapshot.is(Kind::kDict)) {
      fail("", std::string("the pickle holds a ") + snapshot.kind_name() +
                   ", not a PyTorch memory snapshot (a dict, or a list of segments)");
    }
    if (!segments_alone && snapshot.find("segments") == nullptr) {
      fail("", "no \"segments\": not a PyTorch memory snapshot");
    }
    report_.version = kReportVersion;  // 3: symbolized frames
    report_.reason = "import";
    report_.config.stacks = "all";
    const PickleValue& segments = segments_alone ? snapshot : list_field(snapshot, "segments", "");
    const PickleValue* traces = segments_alone ? nullptr : snapshot.find("device_traces");
    count_entries(segments, traces);
    read_segments(segments);
    if (traces != nullptr) read_traces(*traces);
    walk_trace();
    return std::move(report_);
  }

 private:
  // --- frames and stacks ---

  uint32_t frame_of(const PickleValue& f, const std::string& where) {
    // A snapshot shares one dict among the references to a frame: look at it once.
    if (const auto it = frame_of_value_.find(&f); it != frame_of_value_.end()) return it->second;
    check_dict(f, where, "a frame");
    Frame frame;
    const std::string& file = text_field(f, "filename", where);
    // Cut as the views would cut them: each frame keeps its own copy. PyTorch's symbolizer says
    // "??" where it does not know the file, as addr2line does (and the export says it back).
    if (file != "??") frame.file = shown_name_of(file);
    frame.function = shown_name_of(text_field(f, "name", where));
    frame.line = line_of(f, where);
    // PyTorch's frames do not say which are Python's; its Python frames are those of .py files,
    // and of code with a made-up name: a notebook's cell ("<ipython-input-3-…>"), exec's
    // "<string>", torch.fx's "<eval_with_key>.0", "<frozen importlib._bootstrap>".
    frame.python = ends_with(file, ".py") || (!file.empty() && file.front() == '<');
    frame.symbolized = !frame.python;
    const std::string key = std::string(frame.python ? "P" : "S") + '\x1f' + frame.file + '\x1f' +
                            std::to_string(frame.line) + '\x1f' + frame.function;
    const auto [it, added] =
        frame_ids_.try_emplace(key, static_cast<uint32_t>(report_.frames.size()));
    if (added) report_.frames.push_back(std::move(frame));
    frame_of_value_.emplace(&f, it->second);
    return it->second;
  }

  // shown_name of the text of a string value, a long one cut once per value: a snapshot shares one
  // value among the frames that name one file or function (its memo), and the cut hashes the whole
  // text (16,384 frames sharing two names of 1 MiB took 38 s). A name short enough is kept whole.
  std::string shown_name_of(const std::string& text) {
    if (text.size() <= kMaxShownNameBytes) return text;
    const auto [it, added] = shown_names_.try_emplace(&text);
    if (added) it->second = shown_name(text);
    return it->second;
  }

  // The stack of an entry's "frames" (innermost first, as PyTorch lists them); -1 for none.
  int64_t stack_of(const PickleValue& entry, const std::string& where) {
    const PickleValue* frames = entry.find("frames");
    if (frames == nullptr) return -1;
    // A snapshot shares one list among the entries of a stack: convert it once.
    if (const auto it = stack_of_list_.find(frames); it != stack_of_list_.end()) return it->second;
    if (!frames->is(Kind::kList)) {
      fail(where, std::string("\"frames\" is a ") + frames->kind_name() + ", not a list");
    }
    if (frames->items().size() > kMaxStackFrames) {
      fail(where, std::to_string(frames->items().size()) + " frames, more than the " +
                      std::to_string(kMaxStackFrames) + " a stack may have");
    }
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < frames->items().size(); ++i) {
      ids.push_back(frame_of(*frames->items()[i], where + ".frames[" + std::to_string(i) + "]"));
    }
    int64_t stack = -1;
    if (!ids.empty()) {
      const auto [it, added] =
          stack_ids_.try_emplace(ids, static_cast<int64_t>(report_.stacks.size()));
      if (added) report_.stacks.push_back({std::move(ids)});
      stack = it->second;
    }
    stack_of_list_.emplace(frames, stack);
    return stack;
  }

  size_t site_of(int64_t stack) {
    const auto [it, added] = site_ids_.try_emplace(stack, report_.sites.size());
    if (added) {
      Site site;
      site.stack = stack;
      site.kind = "device";
      report_.sites.push_back(std::move(site));
      states_.emplace_back();
    }
    return it->second;
  }

  DeviceFigures& device(int64_t index) {
    const auto [it, added] = device_ids_.try_emplace(index, report_.devices.size());
    if (added) {
      DeviceFigures figures;
      figures.device = index;
      report_.devices.push_back(figures);
    }
    return report_.devices[it->second];
  }

  // --- what the snapshot lists, counted before it is read ---

  void count_entries(const PickleValue& segments, const PickleValue* traces) {
    torch_snapshot::EntryCount count("segments, blocks and trace events");
    count.add(segments.items().size());
    uint64_t blocks = 0;
    for (size_t i = 0; i < segments.items().size(); ++i) {
      const std::string where = "segments[" + std::to_string(i) + "]";
      const PickleValue& s = *segments.items()[i];
      check_dict(s, where, "a segment");
      const size_t listed = list_field(s, "blocks", where).items().size();
      count.add(listed);
      blocks += listed;  // at most kMaxEntries: count.add stops first
    }
    if (traces != nullptr) count.add_trace_events(*traces);
    if (blocks > kMaxBlocks) {
      fail("", "the segments list more than " + std::to_string(kMaxBlocks) +
                   " blocks (a shared one counted each time it is listed)");
    }
  }

  // Refuses a segment that meets one before it on its device: the driver never hands memory out
  // twice, and a segment listed again (a pickle may list one dict any number of times) would
  // count its blocks again.
  void check_no_overlap(const PoolSegment& segment, const std::string& where) {
    std::map<uint64_t, uint64_t>& ends = segment_ends_[segment.device];
    // Base and size are at most kFigureLimit: the end does not wrap.
    const uint64_t end = segment.base + static_cast<uint64_t>(segment.size);
    const auto after = ends.lower_bound(segment.base);
    const bool overlaps = (after != ends.end() && after->first < end) ||
                          (after != ends.begin() && std::prev(after)->second > segment.base);
    if (overlaps) {
      fail(where, "a segment at " + hex(segment.base) + " of " + std::to_string(segment.size) +
                      " bytes, over a segment before it on device " +
                      std::to_string(segment.device));
    }
    ends.emplace(segment.base, end);
  }

  // --- segments: the allocator's state at the snapshot ---

  // The first entry of a block's "history" when the block has no "frames" of its own (a snapshot
  // of PyTorch before 2.1); null otherwise.
  static const PickleValue* legacy_allocation(const PickleValue& block, const std::string& where) {
    const PickleValue* history = block.find("history");
    if (block.find("frames") != nullptr || history == nullptr) return nullptr;
    if (!history->is(Kind::kList)) {
      fail(where, std::string("\"history\" is a ") + history->kind_name() + ", not a list");
    }
    if (history->items().empty()) return nullptr;
    const PickleValue& first = *history->items()[0];
    check_dict(first, where + ".history[0]", "a history entry");
    return &first;
  }

  void read_segments(const PickleValue& segments) {
    for (size_t i = 0; i < segments.items().size(); ++i) {
      const std::string where = "segments[" + std::to_string(i) + "]";
      const PickleValue& s = *segments.items()[i];
      check_dict(s, where, "a segment");
      PoolSegment segment;
      segment.device = static_cast<int64_t>(torch_snapshot::field(s, "device", where));
      if (segment.device < 0 || segment.device >= kMaxDeviceNumber) {
        fail(where, "\"device\" is not a device number");
      }
      segment.base = static_cast<uint64_t>(report_field(s, "address", where));
      segment.size = report_field(s, "total_size", where);
      segment.expandable = flag_field(s, "is_expandable");
      if (segment.size == 0) fail(where, "a segment of 0 bytes");
      check_no_overlap(segment, where);
      const PickleValue& blocks = list_field(s, "blocks", where);
      int64_t offset = 0;
      for (size_t j = 0; j < blocks.items().size(); ++j) {
        const std::string at = where + ".blocks[" + std::to_string(j) + "]";
        const PickleValue& b = *blocks.items()[j];
        check_dict(b, at, "a block");
        // Blocks lie in address order; PyTorch names each one's address (older snapshots do not).
        // Both addresses are at most kFigureLimit, offset at most the segment's size: no wrap.
        const uint64_t address = b.find("address") != nullptr
                                     ? static_cast<uint64_t>(report_field(b, "address", at))
                                     : segment.base + static_cast<uint64_t>(offset);
        if (address < segment.base || address - segment.base < static_cast<uint64_t>(offset)) {
          fail(at, "overlaps the block before it or lies before its segment");
        }
        const auto start = static_cast<int64_t>(address - segment.base);
        if (start > offset) segment.blocks.push_back({offset, start - offset});  // a gap: free
        SegmentBlock block;
        block.offset = start;
        block.size = report_field(b, "size", at);
        if (block.size == 0) fail(at, "a block of 0 bytes");
        if (block.size > segment.size - start) {
          fail(at, "lies outside its segment of " + std::to_string(segment.size) + " bytes");
        }
        const std::string& state = text_field(b, "state", at);
        if (state == "active_allocated") {
          block.allocated = true;
        } else if (state == "active_pending_free" || state == "active_awaiting_free") {
          block.pending = true;
        } else if (state != "inactive") {
          fail(at, "unknown state '" + torch_snapshot::shown(state) + "'");
        }
        if (block.allocated) {
          // PyTorch before 2.1 put an allocated block's frames and requested size in the first
          // entry of its "history" (as PyTorch's viewer still reads them).
          const PickleValue* legacy = legacy_allocation(b, at);
          const PickleValue& origin = legacy != nullptr ? *legacy : b;
          const std::string origin_at = legacy != nullptr ? at + ".history[0]" : at;
          block.requested = optional_report_field(
              origin, legacy != nullptr ? "real_size" : "requested_size", origin_at, block.size);
          if (block.requested > block.size) {
            fail(origin_at, "the requested size is not between 0 and the block's size");
          }
          block.stack = stack_of(origin, origin_at);
          const size_t site = site_of(block.stack);
          states_[site].live_bytes = saturating_add(states_[site].live_bytes, block.requested);
          states_[site].live_count += 1;
          DeviceFigures& figures = device(segment.device);
          int64_t& held = held_by_device_[{site, device_ids_.at(segment.device)}];
          held = saturating_add(held, block.requested);
          figures.in_use_bytes = saturating_add(figures.in_use_bytes, block.requested);
        }
        segment.blocks.push_back(block);
        offset = start + block.size;
      }
      if (offset < segment.size) segment.blocks.push_back({offset, segment.size - offset});
      DeviceFigures& figures = device(segment.device);
      figures.reserved_bytes = saturating_add(figures.reserved_bytes, segment.size);
      report_.segments.push_back(std::move(segment));
    }
    for (size_t i = 0; i < report_.sites.size(); ++i) {
      report_.sites[i].live_bytes = states_[i].live_bytes;
      report_.sites[i].live_count = states_[i].live_count;
    }
  }

  // --- device traces: the allocator's recent actions ---

  void read_traces(const PickleValue& traces) {
    if (!traces.is(Kind::kList)) fail("device_traces", "is not a list");
    if (traces.items().size() > static_cast<size_t>(kMaxDeviceNumber)) {
      fail("device_traces", "lists more devices than there are device numbers");
    }
    std::vector<std::pair<TraceEvent, size_t>> events;  // with their order, for a stable merge
    // The "oom" entries, by their order.
    std::map<size_t, TorchOutOfMemory> out_of_memory;
    for (size_t d = 0; d < traces.items().size(); ++d) {
      const PickleValue& entries = *traces.items()[d];
      const std::string where = "device_traces[" + std::to_string(d) + "]";
      if (!entries.is(Kind::kList)) fail(where, "is not a list");
      std::unordered_map<uint64_t, LiveAllocation> live;
      std::set<uint64_t> requested_before_trace;
      double time = 0;
      for (size_t i = 0; i < entries.items().size(); ++i) {
        const PickleValue& e = *entries.items()[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        check_dict(e, at, "an event");
        const Action action = torch_snapshot::action_of(e, at);
        if (action == Action::kSnapshot || action == Action::kAnnotate) continue;
        const int64_t time_us = optional_report_field(e, "time_us", at, -1);
        // The report's times are seconds up to 1e11 (the year 5138): a later one is no time.
        if (time_us > int64_t{100000000000} * 1000000) fail(at, "time_us is not a time");
        if (time_us >= 0) time = static_cast<double>(time_us) / 1e6;
        TraceEvent event;
        event.time = time;
        event.device = static_cast<int64_t>(d);
        event.size = report_field(e, "size", at);
        event.stream = static_cast<uint64_t>(optional_report_field(e, "stream", at, 0));
        auto emit = [&](const char* type) {
          event.type = type;
          events.emplace_back(event, events.size());
        };
        if (action == Action::kOom) {
          event.stream = 0;
          TorchOutOfMemory oom;
          oom.device = event.device;
          oom.bytes = event.size;
          if (const int64_t free = optional_report_field(e, "device_free", at, -1); free >= 0) {
            oom.device_free = free;
          }
          oom.stack = stack_of(e, at);
          oom.time = time;
          out_of_memory.emplace(events.size(), oom);
          event.stack = oom.stack;  // the failing call's, kept by an export
          emit("oom");
          continue;
        }
        event.address = static_cast<uint64_t>(report_field(e, "addr", at));
        switch (action) {
          case Action::kAlloc: {
            if (event.size == 0) continue;
            event.stack = stack_of(e, at);
            if (!live.emplace(event.address, LiveAllocation{event.size, event.stack}).second) {
              fail(at, "alloc at " + hex(event.address) + ", which is already allocated");
            }
            emit("alloc");
            break;
          }
          case Action::kFreeRequested: {
            const auto it = live.find(event.address);
            if (it == live.end()) {  // allocated before the trace began
              event.stack = stack_of(e, at);
              requested_before_trace.insert(event.address);
              emit("free");
            } else if (it->second.free_requested) {
              fail(at, "free_requested of " + hex(event.address) + " twice");
            } else {
              it->second.free_requested = true;
              event.size = it->second.size;
              event.stack = it->second.stack;
              emit("free");
            }
            break;
          }
          case Action::kFreeCompleted: {
            const auto it = live.find(event.address);
            if (it != live.end()) {
              if (!it->second.free_requested) {
                event.size = it->second.size;
                event.stack = it->second.stack;
                emit("free");
              }
              live.erase(it);
            } else if (requested_before_trace.erase(event.address) == 0) {
              event.stack = stack_of(e, at);
              emit("free");
            }
            break;
          }
          case Action::kSegmentAlloc:
            emit("segment_alloc");
            break;
          case Action::kSegmentMap:
            emit("segment_map");
            break;
          case Action::kSegmentFree:
            emit("segment_free");
            break;
          case Action::kSegmentUnmap:
            emit("segment_unmap");
            break;
          case Action::kOom:
          case Action::kSnapshot:
          case Action::kAnnotate:
            break;
        }
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const auto& a, const auto& b) { return a.first.time < b.first.time; });
    // Where the last out-of-memory entry went in the merged trace.
    size_t last_out_of_memory = events.size();
    for (size_t i = 0; i < events.size(); ++i) {
      if (out_of_memory.count(events[i].second) != 0) last_out_of_memory = i;
    }
    Trace trace;
    for (auto& [event, order] : events) trace.events.push_back(std::move(event));
    trace.capacity = static_cast<int64_t>(trace.events.size());
    trace.recorded = trace.capacity;
    if (last_out_of_memory < events.size()) {
      // It becomes the report's "oom" object, its segments and blocks those at that moment: the
      // snapshot's, with the trace's later events undone.
      TorchOutOfMemory oom = out_of_memory.at(events[last_out_of_memory].second);
      // The failures on its device: a device runs out of its own memory.
      oom.failures = static_cast<int64_t>(
          std::count_if(out_of_memory.begin(), out_of_memory.end(),
                        [&](const auto& entry) { return entry.second.device == oom.device; }));
      const auto after = trace.events.begin() + static_cast<std::ptrdiff_t>(last_out_of_memory + 1);
      report_.oom = out_of_memory_at(oom, report_.segments,
                                     std::vector<TraceEvent>(after, trace.events.end()));
    }
    report_.trace = std::move(trace);
  }

  // --- figures over time, from the trace walked back from the state at the snapshot ---

  // How an event changes what a site holds: +1 an allocation, -1 a free, 0 neither.
  static int direction(const TraceEvent& e) {
    return e.type == "alloc" ? 1 : e.type == "free" ? -1 : 0;
  }
  static int segment_direction(const TraceEvent& e) {
    if (e.type == "segment_alloc" || e.type == "segment_map") return 1;
    return e.type == "segment_free" || e.type == "segment_unmap" ? -1 : 0;
  }

  void walk_trace() {
    const std::vector<TraceEvent> no_events;
    const std::vector<TraceEvent>& events = report_.trace ? report_.trace->events : no_events;
    // The state before the first event: the state at the end, less what the trace did.
    std::vector<SiteState> at_start = states_;
    std::vector<int64_t> in_use_at_start, reserved_at_start;
    for (const TraceEvent& e : events) {
      device(e.device);
      if (direction(e) != 0) site_of(e.stack);  // segment and oom events belong to no site
    }
    at_start.resize(states_.size());
    for (const DeviceFigures& d : report_.devices) {
      in_use_at_start.push_back(d.in_use_bytes);
      reserved_at_start.push_back(d.reserved_bytes);
    }
    for (const TraceEvent& e : events) {
      const size_t d = device_ids_.at(e.device);
      if (const int sign = direction(e)) {
        int64_t& held = held_by_device_[{site_of(e.stack), d}];
        held = saturating_add(held, -sign * e.size);
        SiteState& s = at_start[site_of(e.stack)];
        s.live_bytes = saturating_add(s.live_bytes, -sign * e.size);
        s.live_count -= sign;
        in_use_at_start[d] = saturating_add(in_use_at_start[d], -sign * e.size);
        if (sign > 0) {
          Site& site = report_.sites[site_of(e.stack)];
          site.total_bytes = saturating_add(site.total_bytes, e.size);
          site.total_count += 1;
        }
      }
      if (const int sign = segment_direction(e)) {
        reserved_at_start[d] = saturating_add(reserved_at_start[d], -sign * e.size);
      }
    }
    // A trace that does not add up (its start lost) cannot have held less than nothing.
    for (SiteState& s : at_start) {
      s.live_bytes = std::max<int64_t>(s.live_bytes, 0);
      s.live_count = std::max<int64_t>(s.live_count, 0);
    }
    for (auto& [site_and_device, bytes] : held_by_device_) bytes = std::max<int64_t>(bytes, 0);
    for (int64_t& bytes : in_use_at_start) bytes = std::max<int64_t>(bytes, 0);
    for (int64_t& bytes : reserved_at_start) bytes = std::max<int64_t>(bytes, 0);

    const double start = events.empty() ? 0 : events.front().time;
    const double end = events.empty() ? 0 : events.back().time;
    report_.process.start_time = start;
    report_.process.report_time = end;
    int64_t ticks_per_slot = 1;
    while ((end - start) / (kTickSeconds * static_cast<double>(ticks_per_slot)) >= kMaxSlots) {
      ticks_per_slot *= 2;
    }
    const double slot_seconds = kTickSeconds * static_cast<double>(ticks_per_slot);
    const auto slot_of = [&](double time) {
      return std::min<int64_t>(static_cast<int64_t>((time - start) / slot_seconds),
                               static_cast<int64_t>((end - start) / slot_seconds));
    };
    History history;
    history.ticks_per_slot = ticks_per_slot;
    const int64_t slots = slot_of(end) + 1;
    history.ticks = slots * ticks_per_slot;
    for (int64_t k = 0; k < slots; ++k) {
      history.slot_times.push_back(
          std::min(end, start + static_cast<double>(k + 1) * slot_seconds));
    }
    std::vector<SiteHistory> series(report_.sites.size());

    std::vector<SiteState> live = at_start;
    std::vector<int64_t> in_use = in_use_at_start, reserved = reserved_at_start;
    for (size_t i = 0; i < report_.sites.size(); ++i) {
      Site& site = report_.sites[i];
      site.total_bytes = saturating_add(site.total_bytes, at_start[i].live_bytes);
      site.total_count += at_start[i].live_count;
      site.peak_bytes = at_start[i].live_bytes;
      series[i].site = static_cast<int64_t>(i);
      if (at_start[i].live_bytes > 0) {
        series[i].points.push_back({0, at_start[i].live_bytes, at_start[i].live_bytes});
      }
    }
    int64_t total = 0;
    for (int64_t bytes : in_use) total = saturating_add(total, bytes);
    // Peaks are per device (FORMAT.md): each device's, the events before it (0: the state at the
    // start) and when.
    std::vector<int64_t> device_peak = in_use;
    std::vector<size_t> device_peak_event(in_use.size(), 0);
    std::vector<double> device_peak_time(in_use.size(), start);
    for (size_t d = 0; d < report_.devices.size(); ++d) {
      report_.devices[d].peak_in_use_bytes = in_use[d];
      report_.devices[d].peak_reserved_bytes = reserved[d];
    }
    // What each device caches, and their total, kept as events change them: adding up every
    // device's after each event would take events x devices steps.
    const auto cache_of = [&](size_t d) {
      return std::max<int64_t>(saturating_add(reserved[d], -in_use[d]), 0);
    };
    std::vector<int64_t> cached(in_use.size());
    __int128 cached_total = 0;
    for (size_t d = 0; d < in_use.size(); ++d) {
      cached[d] = cache_of(d);
      cached_total += cached[d];
    }
    const auto recount_cache = [&](size_t d) {
      cached_total -= cached[d];
      cached[d] = cache_of(d);
      cached_total += cached[d];
    };
    std::vector<TimelineSample> timeline;
    const auto sample = [&](double time) {
      const TimelineSample now{time, total, bounded_figure(cached_total)};
      // One sample per tick's span, the one with the most bytes in use, as the shim keeps them.
      if (!timeline.empty() && std::floor((timeline.back().time - start) / kTickSeconds) ==
                                   std::floor((time - start) / kTickSeconds)) {
        if (now.in_use_bytes > timeline.back().in_use_bytes) timeline.back() = now;
      } else {
        timeline.push_back(now);
      }
    };
    sample(start);
    for (size_t i = 0; i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      if (e.type == "oom") continue;
      const size_t d = device_ids_.at(e.device);
      DeviceFigures& figures = report_.devices[d];
      if (const int sign = segment_direction(e)) {
        reserved[d] = saturating_add(reserved[d], sign * e.size);
        figures.peak_reserved_bytes = std::max(figures.peak_reserved_bytes, reserved[d]);
        (sign > 0 ? figures.driver_alloc_calls : figures.driver_free_calls) += 1;
      }
      if (const int sign = direction(e)) {
        const size_t s = site_of(e.stack);
        live[s].live_bytes = saturating_add(live[s].live_bytes, sign * e.size);
        live[s].live_count += sign;
        in_use[d] = saturating_add(in_use[d], sign * e.size);
        total = saturating_add(total, sign * e.size);
        Site& site = report_.sites[s];
        site.peak_bytes = std::max(site.peak_bytes, live[s].live_bytes);
        figures.peak_in_use_bytes = std::max(figures.peak_in_use_bytes, in_use[d]);
        if (sign > 0) figures.pool_hits += 1;
        if (in_use[d] > device_peak[d]) {
          device_peak[d] = in_use[d];
          device_peak_event[d] = i + 1;
          device_peak_time[d] = e.time;
        }
        const int64_t slot = slot_of(e.time);
        std::vector<HistoryPoint>& points = series[s].points;
        const int64_t bytes = std::max<int64_t>(live[s].live_bytes, 0);
        if (!points.empty() && points.back().slot == slot) {
          points.back().last = bytes;
          points.back().max = std::max(points.back().max, bytes);
        } else {
          points.push_back({slot, bytes, bytes});
        }
      }
      recount_cache(d);
      sample(e.time);
    }
    sample(end);
    // What each site held at each device's peak, summed over the devices: on each device, what it
    // held at the start, and the walk again up to that device's peak.
    std::vector<SiteState> at_peak(report_.sites.size());
    for (const auto& [site_and_device, bytes] : held_by_device_) {
      int64_t& held = at_peak[site_and_device.first].live_bytes;
      held = saturating_add(held, bytes);
    }
    for (size_t i = 0; i < events.size(); ++i) {
      const int sign = direction(events[i]);
      if (sign == 0 || i >= device_peak_event[device_ids_.at(events[i].device)]) continue;
      int64_t& bytes = at_peak[site_of(events[i].stack)].live_bytes;
      bytes = saturating_add(bytes, sign * events[i].size);
    }
    int64_t peak = 0;
    double peak_time = start;
    for (size_t d = 0; d < device_peak.size(); ++d) {
      peak = saturating_add(peak, device_peak[d]);
      peak_time = std::max(peak_time, device_peak_time[d]);
    }
    for (size_t i = 0; i < report_.sites.size(); ++i) {
      Site& site = report_.sites[i];
      site.bytes_at_peak = std::max<int64_t>(at_peak[i].live_bytes, 0);
      site.peak_bytes = std::max(site.peak_bytes, site.live_bytes);
      series[i].at_peak = site.bytes_at_peak;
      if (!series[i].points.empty()) history.sites.push_back(std::move(series[i]));
    }
    for (DeviceFigures& figures : report_.devices) {
      figures.cached_bytes = std::max<int64_t>(figures.reserved_bytes - figures.in_use_bytes, 0);
      figures.pool_misses = figures.driver_alloc_calls;
      figures.pool_hits = std::max<int64_t>(figures.pool_hits - figures.pool_misses, 0);
    }
    report_.peak_in_use_bytes = std::max(peak, total);
    report_.peak_time = peak_time;
    history.peak_time = peak_time;
    history.peak_bytes = report_.peak_in_use_bytes;
    report_.history = std::move(history);
    report_.timeline_interval_ms = static_cast<int64_t>(kTickSeconds * 1000);
    report_.timeline = std::move(timeline);
  }

  Report report_;
  std::unordered_map<std::string, uint32_t> frame_ids_;
  std::unordered_map<const PickleValue*, uint32_t> frame_of_value_;
  // Cut names by the text of their string value (PickleValue::text(), as long as the snapshot).
  std::unordered_map<const std::string*, std::string> shown_names_;
  std::map<std::vector<uint32_t>, int64_t> stack_ids_;
  std::unordered_map<const PickleValue*, int64_t> stack_of_list_;
  std::unordered_map<int64_t, size_t> site_ids_;
  std::vector<SiteState> states_;  // per site, at the snapshot
  // Bytes each site held on each device (by its index in report_.devices): at the snapshot, then,
  // once the trace is walked back, at its start.
  std::map<std::pair<size_t, size_t>, int64_t> held_by_device_;
  std::map<int64_t, size_t> device_ids_;
  std::map<int64_t, std::map<uint64_t, uint64_t>> segment_ends_;  // per device, base → end
};

}  // namespace

Report report_from_torch_snapshot(const PickleValue& snapshot, const std::string& source) {
  return Importer(source).run(snapshot);
}

}  // namespace vramshim::analyzer
