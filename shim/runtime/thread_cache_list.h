// The thread caches one thread holds: one per pool it allocates from, so that a thread that moves
// among a node's devices (one process driving 8 GPUs from one thread) keeps its cache of each.
#pragma once

#include <algorithm>

namespace vramshim::pool {
class CachingPool;
class ThreadCache;
}  // namespace vramshim::pool

namespace vramshim::runtime {

// A plain struct, zeroed when made (runtime.cc makes one per thread, at its first cache, and its
// thread-specific key's destructor gives the caches back and deletes it). Most recently used
// first.
struct ThreadCacheList {
  // More than the GPUs of one node (8, 16 on the largest); a cache is a few tens of KB of host
  // memory, and each holds ready blocks of its own device only.
  static constexpr int kMax = 16;

  pool::CachingPool* pools[kMax];
  pool::ThreadCache* caches[kMax];
  int count;

  // The cache of `pool`, now the most recently used; null when the list has none. Reads only
  // this list, not the caches.
  pool::ThreadCache* find(const pool::CachingPool* pool) {
    for (int i = 0; i < count; ++i) {
      if (pools[i] != pool) continue;
      pool::ThreadCache* cache = caches[i];
      move_to_front(i);
      return cache;
    }
    return nullptr;
  }
  // When the list is full, takes out its least recently used cache, for the caller to give back;
  // null while there is room.
  pool::ThreadCache* take_least_recently_used() {
    if (count < kMax) return nullptr;
    return caches[--count];
  }
  // Adds `cache` of `pool` as the most recently used. Requires room (take_least_recently_used).
  void add(pool::CachingPool* pool, pool::ThreadCache* cache) {
    ++count;
    std::copy_backward(pools, pools + count - 1, pools + count);
    std::copy_backward(caches, caches + count - 1, caches + count);
    pools[0] = pool;
    caches[0] = cache;
  }

 private:
  void move_to_front(int i) {
    pool::CachingPool* const pool = pools[i];
    pool::ThreadCache* const cache = caches[i];
    std::copy_backward(pools, pools + i, pools + i + 1);
    std::copy_backward(caches, caches + i, caches + i + 1);
    pools[0] = pool;
    caches[0] = cache;
  }
};

}  // namespace vramshim::runtime
