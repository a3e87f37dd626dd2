// The limit's charges for device memory the driver serves the program itself (stream-ordered, VMM):
// VRAMSHIM_LIMIT caps the bytes a process has in use on a device, whichever allocator made them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "shim/pool/device_limit.h"

namespace vramshim::pool {

// A charge is made before the driver's allocation, so that threads allocating at once cannot pass
// the cap together, and kept by the allocation's tracker key; at the free it is taken out before
// the driver's call (the driver may hand the key out again as soon as it returns) and given back
// once the driver freed the memory.
class DirectCharges {
 public:
  struct Charge {
    DeviceLimit* limit = nullptr;  // null: nothing charged
    uint64_t bytes = 0;
  };

  // Charges `bytes` to `limit` (its device lock taken here); false, and nothing charged, when that
  // would pass the cap.
  static bool charge(DeviceLimit& limit, uint64_t bytes, Charge* charge);
  // Gives a charge back to its limit (nothing for an empty one).
  static void give_back(const Charge& charge) noexcept;
  // The driver's answer to the allocation `charge` was made for: kept under `key` when it served
  // the allocation, else given back. A key already charged (its free not seen) gives its old charge
  // back first. Out of host memory, the charge is given back (the allocation goes uncounted).
  void settle(const Charge& charge, bool served, uint64_t key) noexcept;
  // The allocation under `key` is being freed: its charge, taken out (empty when it has none).
  Charge take(uint64_t key) noexcept;
  // How many charges are kept (for tests).
  size_t size() const;

 private:
  // Keys are spread over shards, so that threads freeing at once seldom wait for each other.
  struct alignas(64) Shard {
    std::mutex mutex;
    std::unordered_map<uint64_t, Charge> charges;
    std::atomic<size_t> size{0};  // charges.size(), read without the mutex
  };
  static constexpr size_t kShards = 16;
  Shard& shard_of(uint64_t key);

  std::array<Shard, kShards> shards_;
};

}  // namespace vramshim::pool
