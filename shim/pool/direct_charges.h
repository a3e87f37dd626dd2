// The limit's charges for device memory the driver serves the program itself (stream-ordered, VMM):
// VRAMSHIM_LIMIT caps the bytes a process has in use on a device, whichever allocator made them.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "shim/pool/device_limit.h"

namespace vramshim::pool {

// A charge is made before the driver's call, so that threads allocating at once cannot pass the
// cap together, and is kept by the allocation's tracker key until its free.
class DirectCharges {
 public:
  struct Charge {
    DeviceLimit* limit = nullptr;  // null: nothing charged
    uint64_t bytes = 0;
  };

  // Charges `bytes` to `limit` (its device lock taken here); false, and nothing charged, when that
  // would pass the cap.
  static bool charge(DeviceLimit& limit, uint64_t bytes, Charge* charge);
  // The driver's answer to the call `charge` was made for: kept under `key` when it served the
  // allocation, else given back. A key already charged (its free not seen) gives its old charge
  // back first. Out of host memory, the charge is given back (the allocation goes uncounted).
  void settle(const Charge& charge, bool served, uint64_t key) noexcept;
  // The allocation under `key` ended: its charge, if it has one, is given back.
  void release(uint64_t key) noexcept;
  // How many charges are kept (for tests).
  size_t size() const { return kept_.load(std::memory_order_relaxed); }

 private:
  static void give_back(const Charge& charge);

  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Charge> charges_;
  std::atomic<size_t> kept_{0};  // charges_.size(), read without the mutex
};

}  // namespace vramshim::pool
