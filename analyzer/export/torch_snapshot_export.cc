#include "analyzer/export/torch_snapshot_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/export/pickle_writer.h"
#include "analyzer/model/figure_sum.h"

namespace vramshim::analyzer {
namespace {

// PyTorch's caching allocator serves requests up to 1 MiB from its small pool (kSmallSize), whose
// segments are 2 MiB (kSmallBuffer).
constexpr int64_t kSmallRequestMax = int64_t{1} << 20;
constexpr int64_t kSmallSegment = int64_t{2} << 20;

// One process's memory as the report keeps it: a single process's report, or one entry of a
// merged report's merged_from.
struct ProcessMemory {
  const ProcessInfo* process;
  const std::vector<PoolSegment>* segments;
  const Trace* trace;  // null: none
  const std::vector<DeviceFigures>* devices;
  int64_t device_free_at_oom = 0;
  // The snapshot's device index of each of the process's devices.
  std::map<int64_t, int64_t> device_index;
};

// A trace entry of the snapshot, in the order PyTorch writes its keys.
struct Entry {
  const char* action;
  uint64_t address = 0;
  int64_t size = 0;
  uint64_t stream = 0;
  int64_t time_us = 0;
  int64_t stack = -1;
  bool oom = false;  // "device_free" instead of "addr"
  int64_t device_free = 0;
};

// A live allocation outside every pool segment, shown as a segment of its own.
struct DirectAllocation {
  int64_t size = 0;
  uint64_t stream = 0;
  int64_t stack = -1;
};

int64_t microseconds(double seconds) { return std::llround(seconds * 1e6); }

// Live device memory of the pool's segments, by start: whole segments, and the mapped pieces of
// expandable ones.
using LiveRanges = std::map<uint64_t, int64_t>;

bool in_segment(const LiveRanges& segments, uint64_t address) {
  auto it = segments.upper_bound(address);
  if (it == segments.begin()) return false;
  --it;
  return address - it->first < static_cast<uint64_t>(it->second);
}

// Takes [address, address + size) out of `ranges`, cutting the ranges it meets: a whole segment
// freed, or a piece of an expandable one unmapped (or, walked back, mapped).
void remove_range(LiveRanges& ranges, uint64_t address, int64_t size) {
  const uint64_t end = address + static_cast<uint64_t>(size);  // sizes are under 2^62: no wrap
  auto it = ranges.upper_bound(address);
  if (it != ranges.begin()) --it;
  while (it != ranges.end() && it->first < end) {
    const uint64_t start = it->first;
    const uint64_t stop = start + static_cast<uint64_t>(it->second);
    if (stop <= address) {
      ++it;
      continue;
    }
    it = ranges.erase(it);
    if (start < address) ranges[start] = static_cast<int64_t>(address - start);
    if (stop > end) ranges[end] = static_cast<int64_t>(stop - end);
  }
}

void add_range(LiveRanges& ranges, uint64_t address, int64_t size) {
  remove_range(ranges, address, size);
  ranges[address] = size;
}

class SnapshotBuilder {
 public:
  SnapshotBuilder(const Report& report, const FrameTable& table) : report_(report), table_(table) {
    // Stack -1 too: with stacks off, the sites of each kind share it.
    for (const Site& site : report.sites) kinds_of_stack_[site.stack].insert(site.kind);
    if (report.merged()) {
      for (const ProcessInfo& p : report.merged_from) {
        add_process({&p, &p.segments, p.trace ? &*p.trace : nullptr, &p.devices}, p.oom);
      }
    } else {
      add_process({&report.process, &report.segments, report.trace ? &*report.trace : nullptr,
                   &report.devices},
                  report.oom);
    }
  }

  std::string build() {
    require_torch_snapshot_memory(report_, "");
    for (ProcessMemory& p : processes_) convert(p);
    out_.begin_dict();
    out_.string("segments");
    out_.begin_list();
    for (ProcessMemory& p : processes_) write_segments(p);
    out_.end_list();
    out_.string("device_traces");
    out_.begin_list();
    for (const std::vector<Entry>& trace : traces_) {
      out_.begin_list();
      for (const Entry& entry : trace) write_entry(entry);
      out_.end_list();
    }
    out_.end_list();
    write_allocator_settings();
    write_device_list();
    out_.end_dict();
    return out_.finish();
  }

 private:
  void add_process(ProcessMemory p, const std::optional<OutOfMemory>& oom) {
    if (oom && oom->device_free_bytes) p.device_free_at_oom = *oom->device_free_bytes;
    std::set<int64_t> devices;
    for (const DeviceFigures& d : *p.devices) devices.insert(d.device);
    for (const PoolSegment& s : *p.segments) {
      devices.insert(s.device);
      any_expandable_ |= s.expandable;
    }
    if (p.trace) {
      for (const TraceEvent& e : p.trace->events) {
        if (e.device >= 0) devices.insert(e.device);
      }
    }
    for (int64_t device : devices) {
      // A single process keeps its device numbers; a merged report numbers its processes'
      // devices one after another.
      const int64_t index = report_.merged() ? static_cast<int64_t>(traces_.size()) : device;
      if (index < 0) continue;
      p.device_index[device] = index;
      if (traces_.size() <= static_cast<size_t>(index)) traces_.resize(index + 1);
      mapping_.push_back({index, {p.process, device}});
    }
    processes_.push_back(std::move(p));
  }

  // Host memory (pinned, cuMemHostAlloc) is no device's: a stack that only ever allocated it.
  bool host_only(int64_t stack) const {
    const auto it = kinds_of_stack_.find(stack);
    return it != kinds_of_stack_.end() && it->second.size() == 1 && *it->second.begin() == "host";
  }
  // The kind of memory outside the pool a stack allocated: its one kind, else "direct".
  std::string direct_kind(int64_t stack) const {
    const auto it = kinds_of_stack_.find(stack);
    if (it == kinds_of_stack_.end()) return "direct";
    std::set<std::string> kinds = it->second;
    kinds.erase("device");
    kinds.erase("pitched");
    kinds.erase("host");
    return kinds.size() == 1 ? *kinds.begin() : "direct";
  }

  // The trace events as the snapshot's entries, per device: allocations inside a pool segment as
  // they are; those outside every segment inside a segment_alloc/segment_free of their own, as the
  // viewer draws every block inside a segment.
  void convert(ProcessMemory& p) {
    using Key = std::pair<int64_t, uint64_t>;  // device, address
    std::map<int64_t, LiveRanges> live_segments;
    for (const PoolSegment& s : *p.segments) live_segments[s.device][s.base] = s.size;
    std::set<Key> pending_at_end;
    for (const PoolSegment& s : *p.segments) {
      for (const SegmentBlock& b : s.blocks) {
        if (b.pending) pending_at_end.insert({s.device, s.base + static_cast<uint64_t>(b.offset)});
      }
    }
    const std::vector<TraceEvent> none;
    const std::vector<TraceEvent>& events = p.trace ? p.trace->events : none;
    // The segments at the start of the window: those at the report, less the ones allocated in
    // it, plus the ones freed in it.
    std::map<Key, size_t> last_free;
    for (size_t i = events.size(); i-- > 0;) {
      const TraceEvent& e = events[i];
      if (e.type == "segment_alloc" || e.type == "segment_map") {
        remove_range(live_segments[e.device], e.address, e.size);
      }
      if (e.type == "segment_free" || e.type == "segment_unmap") {
        add_range(live_segments[e.device], e.address, e.size);
      }
      if (e.type == "free") last_free.try_emplace({e.device, e.address}, i);
    }
    std::map<Key, DirectAllocation> direct;
    std::map<Key, DirectAllocation> pending;  // the allocation of each block pending at the end
    std::set<Key> host;
    for (size_t i = 0; i < events.size(); ++i) {
      const TraceEvent& e = events[i];
      const auto index = p.device_index.find(e.device);
      if (index == p.device_index.end()) continue;  // flush, trim: no device, no entry
      std::vector<Entry>& trace = traces_[static_cast<size_t>(index->second)];
      const Key key{e.device, e.address};
      Entry entry{nullptr, e.address, e.size, e.stream, microseconds(e.time), e.stack};
      auto emit = [&](const char* action) {
        entry.action = action;
        trace.push_back(entry);
      };
      if (e.type == "segment_alloc" || e.type == "segment_map") {
        add_range(live_segments[e.device], e.address, e.size);
        entry.stack = -1;
        emit(e.type == "segment_map" ? "segment_map" : "segment_alloc");
      } else if (e.type == "segment_free" || e.type == "segment_unmap") {
        remove_range(live_segments[e.device], e.address, e.size);
        entry.stack = -1;
        emit(e.type == "segment_unmap" ? "segment_unmap" : "segment_free");
      } else if (e.type == "oom") {
        entry.oom = true;
        entry.device_free = p.device_free_at_oom;
        emit("oom");
      } else if (e.type == "alloc") {
        if (pending_at_end.count(key) > 0) pending[key] = {e.size, e.stream, e.stack};
        if (in_segment(live_segments[e.device], e.address)) {
          emit("alloc");
        } else if (host_only(e.stack)) {
          host.insert(key);
        } else {
          direct[key] = {e.size, e.stream, e.stack};
          emit("segment_alloc");
          emit("alloc");
        }
      } else if (e.type == "free") {
        if (host.erase(key) > 0) continue;
        const auto it = direct.find(key);
        if (it == direct.end() && in_segment(live_segments[e.device], e.address)) {
          emit("free_requested");
          // A block still pending at the report (waiting for a fence) has not completed its free.
          if (!(pending_at_end.count(key) && last_free[key] == i)) emit("free_completed");
        } else if (it != direct.end() || !host_only(e.stack)) {
          if (it != direct.end()) direct.erase(it);
          emit("free_requested");
          emit("free_completed");
          emit("segment_free");
        }
      }
    }
    const int64_t end_us = microseconds(p.process->report_time);
    for (const auto& [device, index] : p.device_index) {
      std::vector<Entry>& trace = traces_[static_cast<size_t>(index)];
      Entry snapshot{"snapshot"};
      // Not before the trace's last entry: another thread's event may come after the report's
      // time was taken, and the viewer reads each trace in time order.
      snapshot.time_us = trace.empty() ? end_us : std::max(end_us, trace.back().time_us);
      trace.push_back(snapshot);
    }
    direct_.push_back(std::move(direct));
    pending_.push_back(std::move(pending));
  }

  void write_segments(const ProcessMemory& p) {
    const size_t which = static_cast<size_t>(&p - processes_.data());
    for (const PoolSegment& s : *p.segments) {
      const auto index = p.device_index.find(s.device);
      if (index == p.device_index.end()) continue;
      int64_t allocated = 0, active = 0, requested = 0, largest_allocated = 0;
      for (const SegmentBlock& b : s.blocks) {
        if (b.allocated) {
          allocated = saturating_add(allocated, b.size);
          requested = saturating_add(requested, b.requested);
          largest_allocated = std::max(largest_allocated, b.size);
        }
        if (b.allocated || b.pending) active = saturating_add(active, b.size);
      }
      // PyTorch's rule: a segment of its small pool is 2 MiB and holds blocks of at most 1 MiB.
      const bool small = s.size <= kSmallSegment && largest_allocated <= kSmallRequestMax;
      begin_segment(index->second, s.base, s.size, allocated, active, requested, 0, small,
                    s.expandable, -1, nullptr);
      for (const SegmentBlock& b : s.blocks) {
        const uint64_t address = s.base + static_cast<uint64_t>(b.offset);
        // A pending block's request and stack are its allocation's in the trace, as PyTorch keeps
        // them until the free completes (the viewer draws the block by its requested size).
        const auto allocation =
            b.pending ? pending_[which].find({s.device, address}) : pending_[which].end();
        const bool traced = allocation != pending_[which].end();
        out_.begin_dict();
        key_integer("address", static_cast<int64_t>(address));
        key_integer("size", b.size);
        key_integer("requested_size", b.allocated ? b.requested
                                      : traced    ? allocation->second.size
                                                  : 0);
        out_.string("state");
        out_.string(b.allocated ? "active_allocated"
                    : b.pending ? "active_pending_free"
                                : "inactive");
        out_.string("frames");
        frames(b.allocated ? b.stack : traced ? allocation->second.stack : -1);
        out_.end_dict();
      }
      end_segment();
    }
    for (const auto& [key, allocation] : direct_[which]) {
      const int64_t index = p.device_index.at(key.first);
      const int64_t size = allocation.size;
      const std::string kind = direct_kind(allocation.stack);
      begin_segment(index, key.second, size, size, size, size, allocation.stream,
                    size <= kSmallRequestMax, false, allocation.stack, kind.c_str());
      out_.begin_dict();
      key_integer("address", static_cast<int64_t>(key.second));
      key_integer("size", size);
      key_integer("requested_size", size);
      out_.string("state");
      out_.string("active_allocated");
      out_.string("frames");
      frames(allocation.stack);
      out_.end_dict();
      end_segment();
    }
  }

  // Opens a segment's dict and its "blocks" list; `stack` gives its frames. `direct_kind`: for a
  // segment of its own around an allocation outside the pool, its kind ("vramshim_kind").
  void begin_segment(int64_t device, uint64_t address, int64_t total, int64_t allocated,
                     int64_t active, int64_t requested, uint64_t stream, bool small,
                     bool expandable, int64_t stack, const char* direct_kind) {
    out_.begin_dict();
    key_integer("device", device);
    key_integer("address", static_cast<int64_t>(address));
    key_integer("total_size", total);
    key_integer("allocated_size", allocated);
    key_integer("active_size", active);
    key_integer("requested_size", requested);
    key_integer("stream", static_cast<int64_t>(stream));
    out_.string("segment_type");
    out_.string(small ? "small" : "large");
    out_.string("segment_pool_id");
    out_.begin_tuple();
    out_.integer(0);
    out_.integer(0);
    out_.end_tuple();
    out_.string("is_expandable");
    out_.boolean(expandable);
    out_.string("frames");
    frames(stack);
    if (direct_kind != nullptr) {
      out_.string("vramshim_kind");
      out_.string(direct_kind);
    }
    out_.string("blocks");
    out_.begin_list();
  }
  void end_segment() {
    out_.end_list();
    out_.end_dict();
  }

  void write_entry(const Entry& e) {
    out_.begin_dict();
    out_.string("action");
    out_.string(e.action);
    if (e.oom) {
      key_integer("device_free", e.device_free);
    } else {
      key_integer("addr", static_cast<int64_t>(e.address));
    }
    key_integer("size", e.size);
    key_integer("stream", static_cast<int64_t>(e.stream));
    key_integer("time_us", e.time_us);
    out_.string("frames");
    frames(e.stack);
    out_.end_dict();
  }

  // The visible display frames of a stack, innermost first, as PyTorch's frames: one list per
  // stack in the pickle's memo, each frame one dict shared by every list it is in.
  void frames(int64_t stack) {
    const auto known = stack_memo_.find(stack);
    if (known != stack_memo_.end()) return out_.recall(known->second);
    std::vector<uint32_t> visible;
    table_.visible_stack(stack, visible);
    out_.begin_list();
    for (uint32_t id : visible) {
      const auto frame = frame_memo_.find(id);
      if (frame != frame_memo_.end()) {
        out_.recall(frame->second);
        continue;
      }
      const DisplayFrame& f = table_.frame(id);
      out_.begin_dict();
      out_.string("filename");
      // Where the file is unknown, the module, as PyTorch's symbolizer names a frame without
      // line information by its library.
      out_.string(!f.file.empty() ? f.file : !f.module.empty() ? f.module : "??");
      // A Python frame without a line is -1 in a report (the shim's, as CPython's); a snapshot's
      // readers take no negative line.
      key_integer("line", std::max<int64_t>(f.line, 0));
      out_.string("name");
      out_.string(f.name());
      out_.end_dict();
      frame_memo_.emplace(id, out_.remember());
    }
    out_.end_list();
    stack_memo_.emplace(stack, out_.remember());
  }

  // PyTorch's own settings, for readers that expect the key, as the shim's pool follows
  // PyTorch's defaults (512 B rounding, 1 MiB small requests, 20 MiB segments, no size cap).
  void write_allocator_settings() {
    out_.string("allocator_settings");
    out_.begin_dict();
    out_.string("PYTORCH_CUDA_ALLOC_CONF");
    out_.string("");
    key_integer("max_split_size", -1);
    out_.string("garbage_collection_threshold");
    out_.real(0.0);
    out_.string("expandable_segments");
    out_.boolean(any_expandable_);
    key_integer("pinned_num_register_threads", 1);
    out_.string("release_lock_on_cudamalloc");
    out_.boolean(false);
    out_.string("pinned_use_cuda_host_register");
    out_.boolean(false);
    out_.string("roundup_power2_divisions");
    out_.begin_dict();
    out_.end_dict();
    out_.end_dict();
  }

  // Which process and device each device index stands for.
  void write_device_list() {
    out_.string("vramshim_devices");
    out_.begin_list();
    for (const auto& [index, where] : mapping_) {
      const ProcessInfo& p = *where.first;
      out_.begin_dict();
      key_integer("index", index);
      key_integer("device", where.second);
      key_integer("pid", p.pid);
      out_.string("rank");
      if (p.rank) {
        out_.integer(*p.rank);
      } else {
        out_.none();
      }
      out_.string("host");
      out_.string(p.host);
      out_.end_dict();
    }
    out_.end_list();
  }

  void key_integer(const char* key, int64_t value) {
    out_.string(key);
    out_.integer(value);
  }

  const Report& report_;
  const FrameTable& table_;
  PickleWriter out_;
  std::vector<ProcessMemory> processes_;
  std::vector<std::vector<Entry>> traces_;
  std::vector<std::pair<int64_t, std::pair<const ProcessInfo*, int64_t>>> mapping_;
  std::vector<std::map<std::pair<int64_t, uint64_t>, DirectAllocation>> direct_;
  // Per process, the trace's allocation of each block pending at the report.
  std::vector<std::map<std::pair<int64_t, uint64_t>, DirectAllocation>> pending_;
  std::unordered_map<int64_t, std::set<std::string>> kinds_of_stack_;
  bool any_expandable_ = false;  // a segment is PyTorch's expandable one (an imported snapshot's)
  std::unordered_map<int64_t, uint32_t> stack_memo_;
  std::unordered_map<uint32_t, uint32_t> frame_memo_;
};

}  // namespace

void require_torch_snapshot_memory(const Report& report, const std::string& source) {
  auto has_memory = [](const std::vector<PoolSegment>& segments,
                       const std::optional<Trace>& trace) {
    return !segments.empty() || trace.has_value();
  };
  bool anything = false;
  if (report.merged()) {
    for (const ProcessInfo& p : report.merged_from) anything |= has_memory(p.segments, p.trace);
  } else {
    anything = has_memory(report.segments, report.trace);
  }
  if (anything) return;
  const std::string prefix = source.empty() ? "" : source + ": ";
  throw std::runtime_error(
      prefix +
      (report.merged()
           ? "the merged report keeps no process's segments or trace (merged by a vramshim older "
             "than report format 3, or its reports had none): merge the reports again"
           : "the report has no segments and no trace (a report of format version 1, or one "
             "written with VRAMSHIM_TRACE=off before the pool held a segment)"));
}

std::string torch_snapshot(const Report& report, const FrameTable& table) {
  return SnapshotBuilder(report, table).build();
}

}  // namespace vramshim::analyzer
