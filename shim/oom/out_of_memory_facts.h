// What the shim knows at the moment an allocation failed for lack of memory: the request, the
// device as the driver sees it, this process's share, the pool's free space, the sites holding the
// most. Gathered by the failing call (shim/runtime/out_of_memory_monitor), explained on stderr and
// in the "oom" report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/attribution/allocation_kind.h"
#include "shim/pool/caching_pool.h"

namespace vramshim::oom {

struct FailedRequest {
  uint64_t bytes = 0;
  attribution::AllocationKind kind = attribution::AllocationKind::kDevice;
  int device = 0;
  pool::OutOfMemoryCause cause = pool::OutOfMemoryCause::kDriver;
  // The entry point's family, for the message; null: named after the kind.
  const char* call = nullptr;
  // A stream capture was running: the pool could not hand its cache back to make room.
  bool during_capture = false;
};

// The driver call that failed, as the explanation names it.
inline const char* call_name(const FailedRequest& request) {
  if (request.call != nullptr) return request.call;
  switch (request.kind) {
    case attribution::AllocationKind::kDevice:
      return "cuMemAlloc";
    case attribution::AllocationKind::kPitched:
      return "cuMemAllocPitch";
    case attribution::AllocationKind::kAsync:
      return "cuMemAllocAsync";
    case attribution::AllocationKind::kManaged:
      return "cuMemAllocManaged";
    case attribution::AllocationKind::kHost:
      return "cuMemAllocHost";
    case attribution::AllocationKind::kVmm:
      return "cuMemCreate";
  }
  return "cuMemAlloc";
}

struct LeadingSite {
  int32_t stack;  // -1: no stack
  attribution::AllocationKind kind;
  uint64_t live_bytes;
  uint64_t live_count;
};

// Another process on the device, from its control socket or from NVML.
struct OtherProcess {
  int pid = 0;
  std::string command;
  std::string source;  // "vramshim" or "nvml"
  std::optional<uint64_t> in_use_bytes;
  std::optional<uint64_t> cached_bytes;
  std::optional<uint64_t> used_bytes;  // NVML's figure
};

struct OutOfMemoryFacts {
  FailedRequest request;
  double time = 0;        // unix seconds
  uint64_t failures = 1;  // the failures since the last explanation, this one included
  // cuMemGetInfo of the failing call's context, as the driver answers it.
  std::optional<uint64_t> device_total_bytes;
  std::optional<uint64_t> device_free_bytes;
  // This process on the device: the pool's figures, and what the driver serves it directly
  // (stream-ordered, VMM, managed), as attributed.
  uint64_t in_use_bytes = 0;
  uint64_t cached_bytes = 0;
  uint64_t reserved_bytes = 0;
  uint64_t direct_bytes = 0;
  std::optional<uint64_t> limit_bytes;
  // Of the direct bytes, those the limit counts besides the pool's bytes in use (stream-ordered and
  // VMM device memory).
  uint64_t direct_charged_bytes = 0;
  uint64_t pool_free_bytes = 0;
  uint64_t pool_largest_free_block = 0;
  std::vector<pool::SegmentPicture> segments;
  int32_t failing_stack = -1;
  std::vector<LeadingSite> leading_sites;  // by live bytes, most first
  std::vector<OtherProcess> other_processes;
  // NVML's figure for this process on the device, when it says: its allocations, and also its
  // CUDA context and loaded modules, which no allocation call made.
  std::optional<uint64_t> own_used_bytes;
  std::vector<std::string> unasked;  // what about other processes could not be asked, and why
};

}  // namespace vramshim::oom
