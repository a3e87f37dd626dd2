// An allocation trace: per device, the allocations and frees a program made, in order, and what its
// own allocator reserved from the driver meanwhile, when the trace records that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vramshim::analyzer {

struct AllocationEvent {
  enum class Action : uint8_t {
    kAllocate,  // `bytes` as requested, at `address`
    kFree,      // the allocation at `address`
    kReserve,   // the program's allocator took [address, address + bytes) from the driver
    kRelease,   // … and gave it back
  };
  Action action;
  uint64_t address;
  uint64_t bytes;
};

struct DeviceTrace {
  int device = 0;
  // Checked when read: every free names a live allocation, no allocation reuses a live address.
  std::vector<AllocationEvent> events;
  size_t allocations = 0;
  size_t frees = 0;
  // Of `allocations`, those live before the trace's first event (a history's window of the last
  // max_entries events), first in `events` after the segments then reserved.
  size_t allocations_before_trace = 0;
  // Whether kReserve / kRelease events are there, and whether each is one whole driver allocation
  // (false when PyTorch's expandable segments map and unmap pieces of a reserved range).
  bool records_reservations = false;
  bool whole_segments = true;
  // Allocations the program's allocator refused for lack of memory; they are not in `events`.
  size_t out_of_memory_events = 0;
};

struct AllocationTrace {
  std::string format;                // what the file was, for people: "PyTorch memory snapshot"
  std::string allocator;             // whose reservations the trace records: "PyTorch"
  std::vector<DeviceTrace> devices;  // those with at least one allocation
};

}  // namespace vramshim::analyzer
