#include "analyzer/model/torch_snapshot.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>

#include "analyzer/model/device_number.h"
#include "analyzer/model/torch_snapshot_fields.h"
#include "analyzer/model/torch_snapshot_window.h"

namespace vramshim::analyzer {
namespace {

using Kind = PickleValue::Kind;
using torch_snapshot::Action;
using torch_snapshot::fail;
using torch_snapshot::field;
using torch_snapshot::hex;

// The most bytes an event may have, and the most a device's live allocations (and, apart, its
// reserved segments) may hold at once: no device holds 2^50 bytes (a petabyte), and a replay's sums
// of more would wrap.
constexpr uint64_t kMaxDeviceBytes = uint64_t{1} << 50;

// The events of one device's trace, checked against the allocations and segments they imply.
class DeviceConverter {
 public:
  explicit DeviceConverter(int device) { trace_.device = device; }

  void add(const PickleValue& entry, const std::string& where) {
    torch_snapshot::check_dict(entry, where, "an event");
    const Action action = torch_snapshot::action_of(entry, where);
    if (action == Action::kSnapshot || action == Action::kAnnotate) return;
    if (action == Action::kOom) {
      ++trace_.out_of_memory_events;
      return;
    }
    const uint64_t address = field(entry, "addr", where);
    const uint64_t bytes = field(entry, "size", where);
    if (bytes > kMaxDeviceBytes) {
      fail(where, "a size of " + std::to_string(bytes) + " bytes, more than any device holds");
    }
    switch (action) {
      case Action::kAlloc:
        return allocate(address, bytes, where);
      case Action::kFreeRequested: {
        const auto it = live_.find(address);
        if (it == live_.end()) fail(where, unknown_free("free_requested", address));
        if (it->second.free_requested) fail(where, "free_requested of " + hex(address) + " twice");
        it->second.free_requested = true;
        return;
      }
      case Action::kFreeCompleted: {
        const auto it = live_.find(address);
        if (it == live_.end()) fail(where, unknown_free("free_completed", address));
        live_bytes_ -= it->second.bytes;
        live_.erase(it);
        ++trace_.frees;
        return emit(AllocationEvent::Action::kFree, address, bytes);
      }
      case Action::kSegmentAlloc:
        return reserve(address, bytes, where);
      case Action::kSegmentFree: {
        const auto it = segments_.find(address);
        if (it == segments_.end()) {
          fail(where, "segment_free of " + hex(address) + ", which no segment_alloc allocated");
        }
        reserved_bytes_ -= it->second;
        segments_.erase(it);
        return emit(AllocationEvent::Action::kRelease, address, bytes);
      }
      case Action::kSegmentMap:
        return map(address, bytes, where);
      case Action::kSegmentUnmap:
        trace_.whole_segments = false;
        if (bytes > mapped_) fail(where, "segment_unmap of more than the trace mapped");
        mapped_ -= bytes;
        reserved_bytes_ -= bytes;
        return emit(AllocationEvent::Action::kRelease, address, bytes);
      case Action::kOom:
      case Action::kSnapshot:
      case Action::kAnnotate:
        return;
    }
  }

  // What the device held before the trace's first event (WindowStart), replayed first: segments,
  // then mapped bytes of expandable segments, then allocations, each in address order.
  void seed(const std::map<uint64_t, uint64_t>& segments, uint64_t mapped,
            const std::map<uint64_t, uint64_t>& allocations, const std::string& where) {
    for (const auto& [address, bytes] : segments) {
      reserve(address, bytes, where);
    }
    if (mapped > 0) map(0, mapped, where);
    for (const auto& [address, bytes] : allocations) {
      allocate(address, bytes, where);
      ++trace_.allocations_before_trace;
    }
  }

  DeviceTrace finish() { return std::move(trace_); }

 private:
  void allocate(uint64_t address, uint64_t bytes, const std::string& where) {
    if (bytes == 0) fail(where, "alloc of 0 bytes");
    if (!live_.emplace(address, LiveAllocation{bytes, false}).second) {
      fail(where, "alloc at " + hex(address) + ", which is already allocated");
    }
    hold(live_bytes_, bytes, where, "allocations");
    ++trace_.allocations;
    emit(AllocationEvent::Action::kAllocate, address, bytes);
  }
  void reserve(uint64_t address, uint64_t bytes, const std::string& where) {
    if (bytes == 0) fail(where, "segment_alloc of 0 bytes");
    if (overlaps_a_segment(address, bytes)) {
      fail(where, "segment_alloc at " + hex(address) + " of " + std::to_string(bytes) +
                      " bytes, over a segment already allocated");
    }
    hold(reserved_bytes_, bytes, where, "segments");
    segments_.emplace(address, bytes);
    emit(AllocationEvent::Action::kReserve, address, bytes);
  }
  void map(uint64_t address, uint64_t bytes, const std::string& where) {
    trace_.whole_segments = false;
    hold(reserved_bytes_, bytes, where, "segments");
    mapped_ += bytes;
    emit(AllocationEvent::Action::kReserve, address, bytes);
  }

  // Whether [address, address + bytes) meets a live segment (or runs past the address space). The
  // driver never hands out memory twice; a trace that says so would make the replay's figures
  // meaningless, and its walks over the segments quadratic.
  bool overlaps_a_segment(uint64_t address, uint64_t bytes) const {
    if (bytes > UINT64_MAX - address) return true;
    const auto after = segments_.lower_bound(address);
    if (after != segments_.end() && after->first < address + bytes) return true;
    if (after == segments_.begin()) return false;
    const auto before = std::prev(after);
    return before->first + before->second > address;
  }

  // Adds `bytes` to what the device holds at once in `what` (allocations or segments), refusing the
  // trace past kMaxDeviceBytes.
  static void hold(uint64_t& held, uint64_t bytes, const std::string& where, const char* what) {
    held += bytes;  // both at most kMaxDeviceBytes: no wrap
    if (held > kMaxDeviceBytes) {
      fail(where, std::string(what) + " live at once hold more than 2^50 bytes (" +
                      std::to_string(kMaxDeviceBytes) + "), more than any device holds");
    }
  }

  static std::string unknown_free(const char* action, uint64_t address) {
    return std::string(action) + " of " + hex(address) + ", which is not allocated then";
  }

  void emit(AllocationEvent::Action action, uint64_t address, uint64_t bytes) {
    if (action == AllocationEvent::Action::kReserve ||
        action == AllocationEvent::Action::kRelease) {
      trace_.records_reservations = true;
    }
    trace_.events.push_back({action, address, bytes});
  }

  DeviceTrace trace_;
  struct LiveAllocation {
    uint64_t bytes;
    bool free_requested;
  };
  std::unordered_map<uint64_t, LiveAllocation> live_;  // by address
  std::map<uint64_t, uint64_t> segments_;              // address → bytes
  uint64_t mapped_ = 0;                                // by segment_map, less segment_unmap
  uint64_t live_bytes_ = 0;                            // in live_
  uint64_t reserved_bytes_ = 0;                        // in segments_, and mapped_
};

}  // namespace

AllocationTrace trace_from_torch_snapshot(const PickleValue& snapshot) {
  if (!snapshot.is(Kind::kDict)) {
    fail("", std::string("the pickle holds a ") + snapshot.kind_name() +
                 ", not a PyTorch memory snapshot (a dict)");
  }
  const PickleValue* traces = snapshot.find("device_traces");
  if (traces == nullptr) fail("", "no \"device_traces\": not a PyTorch memory snapshot");
  if (!traces->is(Kind::kList)) fail("device_traces", "is not a list");
  if (traces->items().size() > static_cast<size_t>(kMaxDeviceNumber)) {
    fail("device_traces", "lists more devices than there are device numbers");
  }
  torch_snapshot::EntryCount("trace events").add_trace_events(*traces);
  const torch_snapshot::SnapshotSegments segments(snapshot.find("segments"));
  AllocationTrace result;
  result.format = "PyTorch memory snapshot";
  result.allocator = "PyTorch";
  for (size_t device = 0; device < traces->items().size(); ++device) {
    const PickleValue& events = *traces->items()[device];
    const std::string where = "device_traces[" + std::to_string(device) + "]";
    if (!events.is(Kind::kList)) fail(where, "is not a list");
    DeviceConverter converter(static_cast<int>(device));
    const torch_snapshot::WindowStart start =
        torch_snapshot::window_start(events, segments, static_cast<int64_t>(device), where);
    converter.seed(start.segments, start.mapped_bytes, start.allocations, where);
    for (size_t i = 0; i < events.items().size(); ++i) {
      converter.add(*events.items()[i], where + "[" + std::to_string(i) + "]");
    }
    DeviceTrace trace = converter.finish();
    if (trace.allocations > 0) result.devices.push_back(std::move(trace));
  }
  if (result.devices.empty()) {
    fail("",
         "the snapshot records no allocations: call "
         "torch.cuda.memory._record_memory_history() before the workload runs");
  }
  return result;
}

}  // namespace vramshim::analyzer
