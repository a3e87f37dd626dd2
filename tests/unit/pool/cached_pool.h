// A pool whose threads allocate and free through thread caches of their own, as the runtime's
// threads do (shim/runtime: a cache per thread and pool, given back at thread exit).
#pragma once

#include <cuda.h>

#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "shim/pool/caching_pool.h"
#include "shim/pool/device_caches.h"
#include "tests/unit/pool/fake_device_api.h"

namespace vramshim::pool::testing {

class CachedPool {
 public:
  static constexpr uint64_t kCapacity = uint64_t{80} << 30;

  // With `tagger`, the pool's device is 0 and its lock the tagger's figures lock of device 0.
  explicit CachedPool(PoolOptions options = {}, AllocationTagger* tagger = nullptr,
                      uint64_t capacity = kCapacity)
      : fake(capacity, &capture),
        limit(options.limit_bytes, tagger != nullptr ? &tagger->figures_lock(0) : nullptr),
        pool(fake, options, limit, capture, tagger, 0, &caches) {}

  // The calling thread's cache, opened on its first call.
  ThreadCache* mine() {
    std::lock_guard<std::mutex> guard(mutex_);
    ThreadCache*& cache = of_thread_[std::this_thread::get_id()];
    if (cache == nullptr) cache = pool.open_thread_cache();
    return cache;
  }
  // What the runtime does at thread exit.
  void close_mine() {
    ThreadCache* cache = nullptr;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      auto it = of_thread_.find(std::this_thread::get_id());
      if (it == of_thread_.end()) return;
      cache = it->second;
      of_thread_.erase(it);
    }
    if (cache != nullptr) pool.close_thread_cache(*cache);
  }

  CUresult allocate(size_t bytes, CUdeviceptr* ptr, uint64_t request = 0) {
    return pool.allocate(bytes, ptr, request, nullptr, mine());
  }
  FreeResult free(CUdeviceptr ptr) { return pool.free(ptr, mine()); }

  // A stream the pool hears of, as the hooks tell it.
  CUstream create_stream(unsigned flags) {
    const CUstream created = reinterpret_cast<CUstream>(next_stream_++);
    if (flags & CU_STREAM_NON_BLOCKING) fake.make_non_blocking(created);
    pool.on_stream_created(created, flags);
    return created;
  }

  CaptureState capture;
  FakeDeviceApi fake;
  DeviceLimit limit;
  DeviceCaches caches;
  CachingPool pool;

 private:
  std::mutex mutex_;
  std::map<std::thread::id, ThreadCache*> of_thread_;
  uintptr_t next_stream_ = 0x100;
};

// Blocks one thread passes to another to free, so that frees come from threads other than the one
// that allocated.
class PassedBlocks {
 public:
  void pass(CUdeviceptr ptr) {
    std::lock_guard<std::mutex> guard(mutex_);
    blocks_.push_back(ptr);
  }
  // A block another thread passed, or 0.
  CUdeviceptr take() {
    std::lock_guard<std::mutex> guard(mutex_);
    if (blocks_.empty()) return 0;
    const CUdeviceptr ptr = blocks_.back();
    blocks_.pop_back();
    return ptr;
  }

 private:
  std::mutex mutex_;
  std::vector<CUdeviceptr> blocks_;
};

}  // namespace vramshim::pool::testing
