// The pools of the process, one per CUDA context, found without a lock on the hot path; also what
// applies to every pool (flush, trim, limit, statistics by device).
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "shim/intercept/internal_failure.h"
#include "shim/pool/caching_pool.h"
#include "shim/pool/capture_state.h"
#include "shim/pool/device_api.h"
#include "shim/pool/device_caches.h"
#include "shim/pool/device_limit.h"
#include "shim/pool/mem_info.h"
#include "shim/pool/pool_options.h"
#include "shim/pool/pool_stats.h"

namespace vramshim::pool {

struct DeviceStats {
  int device = 0;
  PoolStats stats;
};

// The pools of the process, one per CUDA context. Lookup by context is lock-free (an open-addressed
// table of atomics); creating and removing pools takes a mutex. Removed pools are emptied and kept,
// so a pointer from find() stays valid; their cumulative figures are folded into their device's,
// and they leave the list the registry walks, so a context reset in a loop costs neither time nor
// more than the pool's empty shell per cycle.
class PoolRegistry {
 public:
  static constexpr size_t kMaxContexts = 256;

  // Every pool tells `tagger` (optional) of the allocations it hands out and takes back.
  PoolRegistry(const PoolOptions& options, const CaptureState& capture,
               AllocationTagger* tagger = nullptr);
  // Calls nothing: pools are forgotten, not flushed (process exit).
  ~PoolRegistry();
  PoolRegistry(const PoolRegistry&) = delete;
  PoolRegistry& operator=(const PoolRegistry&) = delete;

  // The pool of `context`, or nullptr when it has none yet.
  CachingPool* find(CUcontext context) const;
  // The pool of `context`, created on first use with the DeviceApi `make_api()` returns.
  template <typename MakeApi>
  CachingPool* find_or_create(CUcontext context, int device, MakeApi&& make_api) {
    if (CachingPool* pool = find(context)) return pool;
    return insert(context, device, make_api());
  }
  // Adds a pool for `context` using `api` (discarded when another thread added one first). nullptr
  // while kMaxContexts contexts have pools (a removed context's slot is free again); the caller
  // then passes calls straight to the driver.
  CachingPool* insert(CUcontext context, int device, std::unique_ptr<DeviceApi> api);
  // Context teardown: drops the context's pool and forgets the context (before the driver destroys
  // it).
  void remove(CUcontext context);
  // A context of `device` exists (created, or a primary one retained). The streams of every
  // context of a device reach the memory of all of them: while a device has more than one,
  // each of its pools fences with a synchronize of every one (CachingPool::set_other_contexts).
  void add_context(CUcontext context, int device);

  // The pool holding `ptr` (see CachingPool::holds), whichever context it belongs to; nullptr when
  // none does. Without a lock or an allocation (a free of another context's memory, and the frees
  // after an internal failure, come this way).
  CachingPool* find_holder(CUdeviceptr ptr) const;
  // Whether `ptr` lies inside a segment of any pool (CachingPool::in_segment); as find_holder.
  bool in_some_segment(CUdeviceptr ptr) const;
  // A stream exists that pools cannot record events on: every pool, and every pool made later,
  // fences with a context synchronize.
  void on_unfenceable_stream();
  // No capture runs any more: each pool makes the synchronize it owes (CachingPool).
  void after_captures_end();
  FlushResult flush_all();
  // The driver refused device memory on `device` (-1: on a device not known): every pool of it (of
  // every device) but `except` hands back its free segments
  // (CachingPool::release_for_out_of_memory). Returns the bytes handed back.
  uint64_t release_for_out_of_memory(int device, const CachingPool* except);
  // Releases free segments until the pools together cache at most `keep_cached_bytes`.
  uint64_t trim_all(uint64_t keep_cached_bytes);
  uint64_t release_if_idle(std::chrono::steady_clock::time_point now);
  uint64_t enforce_max_cached();
  // Sets (or with nullopt removes) the cap on bytes in use of every device.
  void set_limit(std::optional<uint64_t> limit);
  // The cap of `device` (0 to kIndexedDevices - 1), what device memory the driver serves the
  // program itself is charged to (DirectCharges): null while the device has none yet (limit_of,
  // without a lock) or, made on first use (make_limit_of), out of host memory; null after an
  // internal failure, and for other device numbers.
  DeviceLimit* limit_of(int device);
  DeviceLimit* make_limit_of(int device);
  // Folds the thread caches' credits of `device` into its figures (CachingPool's
  // fold_device_caches), so that its limit counts its bytes in use exactly.
  void fold_device_caches(int device);
  std::optional<uint64_t> limit() const;

  std::vector<DeviceStats> stats_by_device() const;
  // The segments and free space of every pool of `device`, together.
  PoolPicture picture_of_device(int device) const;
  // The same of every pool, each segment naming its device.
  PoolPicture picture_of_all() const;
  MemInfo mem_get_info(int device, MemInfo driver) const;
  size_t device_total_mem(int device, size_t driver_total) const;

  // In a fork child: forgets every pool without calling the driver or touching their locks (another
  // thread of the parent may have held them). The registry is empty and usable afterwards.
  void reset_after_fork();

 private:
  struct Entry {
    CUcontext context = nullptr;
    int device = 0;
    std::unique_ptr<DeviceApi> api;
    std::unique_ptr<CachingPool> pool;
    bool removed = false;
  };
  // What the pools of one device share, under the device lock.
  struct DeviceEntry {
    DeviceEntry(int device, std::optional<uint64_t> limit, support::AdaptiveMutex* device_lock)
        : device(device), limit(limit, device_lock) {}
    int device;
    DeviceLimit limit;
    DeviceCaches caches;
    std::vector<CUcontext> contexts;  // live, as add_context and remove heard
    PoolStats removed;                // the figures of removed pools (their peaks are the limit's)
  };
  // A slot changes (under mutex_) as a sequence lock: `changes` odd while its context or pool
  // changes, so that a find() reading both knows they belong together.
  struct Slot {
    std::atomic<CUcontext> context{nullptr};
    std::atomic<CachingPool*> pool{nullptr};
    std::atomic<uint32_t> changes{0};
  };
  static void begin_change(Slot& slot);
  static void end_change(Slot& slot);

  static size_t slot_index(CUcontext context);
  // The first live pool for which `predicate(pool)` holds, by the slots: no lock, no allocation.
  template <typename Predicate>
  CachingPool* first_pool(Predicate&& predicate) const;
  // After an internal failure (shim/intercept/internal_failure.h) a pool may be half-updated: the
  // registry neither finds, reads, changes nor releases one any more. What the pools hold stays
  // held; find_holder and in_some_segment still answer, so that no pointer of theirs reaches the
  // driver.
  static bool stopped() { return intercept::internal_failure_seen(); }
  DeviceEntry& device_entry(int device);  // caller holds mutex_
  const DeviceLimit* find_limit(int device) const;
  std::vector<CachingPool*> live_pools() const;
  // The pools not removed, with their devices; `device` -1: of every device.
  std::vector<std::pair<int, CachingPool*>> pools_of(int device) const;
  PoolPicture picture_of(int device) const;
  bool knows_context(CUcontext context, int device);  // caller holds mutex_
  // Gives every pool of `device` the device's other contexts; caller holds contexts_mutex_.
  void tell_pools_other_contexts(int device);
  // Whether a device other than `device` has a live context; caller holds mutex_.
  bool other_devices_live(int device) const;
  // Tells every pool whether another device has a live context; caller holds contexts_mutex_.
  void tell_pools_other_devices();
  // Folds a removed, dropped pool's figures into its device's and moves its entry out of entries_.
  void retire(CachingPool* pool);

  const PoolOptions options_;
  const CaptureState& capture_;
  AllocationTagger* const tagger_;
  std::array<Slot, kMaxContexts> slots_;
  // Serializes the changes of a device's contexts with telling the pools of them, so that the last
  // list a pool hears is the current one. Taken before mutex_.
  std::mutex contexts_mutex_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;          // live, and removed ones not yet folded
  std::vector<std::unique_ptr<Entry>> removed_entries_;  // kept for the pointers still held
  std::vector<std::unique_ptr<DeviceEntry>> devices_;
  // Device entries by ordinal, for limit_of() without the mutex (entries live as long as the
  // registry).
  static constexpr int kIndexedDevices = 64;
  std::array<std::atomic<DeviceLimit*>, kIndexedDevices> limits_by_device_{};
  std::optional<uint64_t> limit_;
  bool unfenceable_stream_ = false;
};

}  // namespace vramshim::pool
