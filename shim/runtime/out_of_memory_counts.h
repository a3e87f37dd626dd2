// How many allocations of each device the shim failed with CUDA_ERROR_OUT_OF_MEMORY, for the
// `stats` answer's "out_of_memory" (the explanation, OutOfMemoryMonitor, tells only of some of
// them).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace vramshim::runtime {

class OutOfMemoryCounts {
 public:
  // Device ordinals counted one by one; failures of higher ones are counted on the last.
  static constexpr int kDevices = 64;

  // Lock-free: called by the failing call.
  void count(int device) noexcept {
    const int slot = device < 0 ? 0 : (device < kDevices ? device : kDevices - 1);
    failures_[slot].fetch_add(1, std::memory_order_relaxed);
  }

  // (device, failures) for every device with at least one failure, in device order.
  std::vector<std::pair<int, std::uint64_t>> by_device() const {
    std::vector<std::pair<int, std::uint64_t>> counts;
    for (int device = 0; device < kDevices; ++device) {
      const std::uint64_t failures = failures_[device].load(std::memory_order_relaxed);
      if (failures != 0) counts.emplace_back(device, failures);
    }
    return counts;
  }

 private:
  std::atomic<std::uint64_t> failures_[kDevices] = {};
};

}  // namespace vramshim::runtime
