// The per-device cap on bytes in use (VRAMSHIM_LIMIT, `limit` command), shared by the pools of
// every context on that device and by the device memory the driver serves the program itself
// (stream-ordered, VMM: DirectCharges). It also keeps the device's bytes in use, charged whether or
// not a cap is set, so a cap set at run time applies at once, and the pools' bytes reserved and the
// peaks of both: the device's own, where the pools' peaks added up are only a bound (a context's
// peak and another's at another time).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

// Charges are made under the device lock, the one lock every pool of the device takes for its
// bookkeeping (CachingPool), so a charge is a plain load and store: two atomic read-modify-writes
// fewer per pool-hit pair. The figures are atomics all the same, for readers without the lock.
class DeviceLimit {
 public:
  static constexpr uint64_t kNoLimit = UINT64_MAX;

  // `device_lock`: the lock the device's pools share (the tracker's figures lock of the device when
  // their allocations are attributed); null: the limit's own.
  explicit DeviceLimit(std::optional<uint64_t> limit = std::nullopt,
                       support::AdaptiveMutex* device_lock = nullptr)
      : device_lock_(device_lock != nullptr ? device_lock : &own_lock_) {
    set(limit);
  }
  DeviceLimit(const DeviceLimit&) = delete;
  DeviceLimit& operator=(const DeviceLimit&) = delete;

  support::AdaptiveMutex& device_lock() const { return *device_lock_; }

  void set(std::optional<uint64_t> limit) {
    limit_.store(limit ? *limit : kNoLimit, std::memory_order_relaxed);
  }
  std::optional<uint64_t> get() const {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (limit == kNoLimit) return std::nullopt;
    return limit;
  }

  // Whether `bytes` more would still fit, without charging them; any thread, an estimate without
  // the device lock.
  bool would_fit(uint64_t bytes) const {
    return fits(in_use_.load(std::memory_order_relaxed), bytes);
  }
  // Whether the bytes in use are at most the cap; any thread, without the device lock. A thread
  // cache spends credit only while this holds: the bytes in use it sees are never below the true
  // ones, so its allocations stay under the cap, and under one lowered below what is in use too.
  bool within_cap() const {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    return limit == kNoLimit || in_use_.load(std::memory_order_relaxed) <= limit;
  }
  // Charges `bytes` to the device; false (and nothing charged) when that would pass the cap.
  // Requires device_lock().
  bool try_charge(uint64_t bytes) {
    const uint64_t before = in_use_.load(std::memory_order_relaxed);
    if (!fits(before, bytes)) return false;
    in_use_.store(before + bytes, std::memory_order_relaxed);
    return true;
  }
  // Requires device_lock().
  void uncharge(uint64_t bytes) {
    in_use_.store(in_use_.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // Device memory the driver serves the program itself (stream-ordered, VMM), charged before the
  // driver's call: counted by the cap and by cuMemGetInfo, in no peak (the peaks are the pools').
  // false (and nothing charged) when it would pass the cap. Both require device_lock().
  bool try_charge_direct(uint64_t bytes) {
    if (!try_charge(bytes)) return false;
    direct_.store(direct_bytes() + bytes, std::memory_order_relaxed);
    return true;
  }
  void uncharge_direct(uint64_t bytes) {
    uncharge(bytes);
    direct_.store(direct_bytes() - bytes, std::memory_order_relaxed);
  }
  uint64_t direct_bytes() const { return direct_.load(std::memory_order_relaxed); }
  // Whether the pools' bytes in use now, as counted, are above the peak: the caller makes them
  // exact (folds the thread caches' credits back, which may take them below it again) and then
  // calls note_peak_in_use(). Both require device_lock().
  bool above_peak_in_use() const { return in_use() - direct_bytes() > peak_in_use(); }
  void note_peak_in_use() {
    const uint64_t held = in_use() - direct_bytes() - unanswered_;
    if (held > peak_in_use()) peak_in_use_.store(held, std::memory_order_relaxed);
  }
  // Bytes charged for allocations the driver has not answered yet (the pool off: charged first, so
  // that the cap holds among threads): in no peak, as the driver may refuse them. Requires
  // device_lock().
  void add_unanswered(int64_t delta) { unanswered_ += static_cast<uint64_t>(delta); }
  uint64_t peak_in_use() const { return peak_in_use_.load(std::memory_order_relaxed); }
  // A pool's bytes reserved changed by `delta`. Requires device_lock().
  void add_reserved(int64_t delta) {
    const uint64_t reserved = reserved_ + static_cast<uint64_t>(delta);
    reserved_ = reserved;
    if (reserved > peak_reserved_.load(std::memory_order_relaxed)) {
      peak_reserved_.store(reserved, std::memory_order_relaxed);
    }
  }
  uint64_t peak_reserved() const { return peak_reserved_.load(std::memory_order_relaxed); }
  // In a fork child: nothing of the parent's is in use or reserved there.
  void reset_in_use() {
    in_use_.store(0, std::memory_order_relaxed);
    direct_.store(0, std::memory_order_relaxed);
    reserved_ = 0;
    unanswered_ = 0;
  }

 private:
  // Whether `bytes` more than `in_use` stay within the cap; a request so large that the sum would
  // wrap never does, even without a cap.
  bool fits(uint64_t in_use, uint64_t bytes) const {
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    return in_use <= limit && bytes <= limit - in_use;
  }

  support::AdaptiveMutex own_lock_;
  support::AdaptiveMutex* const device_lock_;
  std::atomic<uint64_t> limit_{kNoLimit};
  std::atomic<uint64_t> in_use_{0};  // the pools' and direct_
  std::atomic<uint64_t> direct_{0};
  std::atomic<uint64_t> peak_in_use_{0};
  uint64_t reserved_ = 0;    // under device_lock()
  uint64_t unanswered_ = 0;  // under device_lock()
  std::atomic<uint64_t> peak_reserved_{0};
};

}  // namespace vramshim::pool
