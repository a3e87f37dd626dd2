// The per-device cap on bytes in use (VRAMSHIM_LIMIT, `limit` command), shared by the pools of
// every context on that device. It also keeps the device's bytes in use, charged whether or not a
// cap is set, so a cap set at run time applies at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace vramshim::pool {

class DeviceLimit {
 public:
  static constexpr uint64_t kNoLimit = UINT64_MAX;

  explicit DeviceLimit(std::optional<uint64_t> limit = std::nullopt) { set(limit); }

  void set(std::optional<uint64_t> limit) {
    limit_.store(limit ? *limit : kNoLimit, std::memory_order_relaxed);
  }
  std::optional<uint64_t> get() const {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (limit == kNoLimit) return std::nullopt;
    return limit;
  }

  // Whether `bytes` more would still fit, without charging them.
  bool would_fit(uint64_t bytes) const {
    return in_use_.load(std::memory_order_relaxed) + bytes <=
           limit_.load(std::memory_order_relaxed);
  }
  // Charges `bytes` to the device; false (and nothing charged) when that would pass the cap.
  bool try_charge(uint64_t bytes) {
    const uint64_t before = in_use_.fetch_add(bytes, std::memory_order_relaxed);
    if (before + bytes > limit_.load(std::memory_order_relaxed)) {
      in_use_.fetch_sub(bytes, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  void uncharge(uint64_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // In a fork child: nothing of the parent's is in use there.
  void reset_in_use() { in_use_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> limit_{kNoLimit};
  std::atomic<uint64_t> in_use_{0};
};

}  // namespace vramshim::pool
