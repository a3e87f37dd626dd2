// A thread keeps its cache of every pool it moves among, up to more devices than a node has; past
// that, the one it used least recently is given back.
#include "shim/runtime/thread_cache_list.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace vramshim::runtime {
namespace {

// Stand-ins: the list only keeps and compares the pointers.
pool::CachingPool* pool_number(int i) {
  return reinterpret_cast<pool::CachingPool*>(static_cast<uintptr_t>(0x1000 * (i + 1)));
}
pool::ThreadCache* cache_number(int i) {
  return reinterpret_cast<pool::ThreadCache*>(static_cast<uintptr_t>(0x1000 * (i + 1) + 8));
}

// What runtime.cc's thread_cache_of does: the list's cache, else one opened (counted) in its
// place, the least recently used given back when the list is full.
struct Thread {
  ThreadCacheList list{};
  int opened = 0;
  int given_back = 0;

  pool::ThreadCache* cache_of(int pool) {
    if (pool::ThreadCache* cache = list.find(pool_number(pool))) return cache;
    if (list.take_least_recently_used() != nullptr) ++given_back;
    ++opened;
    list.add(pool_number(pool), cache_number(pool));
    return cache_number(pool);
  }
};

TEST(ThreadCacheList, AThreadMovingAmongEightDevicesKeepsACacheOfEach) {
  Thread thread;
  for (int round = 0; round < 100; ++round) {
    for (int device = 0; device < 8; ++device) {
      ASSERT_EQ(thread.cache_of(device), cache_number(device));
    }
  }
  EXPECT_EQ(thread.opened, 8) << "each device's cache opened once, not once per visit";
  EXPECT_EQ(thread.given_back, 0);
}

TEST(ThreadCacheList, AFullListGivesBackTheLeastRecentlyUsedCache) {
  Thread thread;
  for (int pool = 0; pool < ThreadCacheList::kMax; ++pool) thread.cache_of(pool);
  thread.cache_of(0);  // the oldest, used again
  ASSERT_EQ(thread.list.take_least_recently_used(), cache_number(1));
  thread.list.add(pool_number(ThreadCacheList::kMax), cache_number(ThreadCacheList::kMax));
  EXPECT_EQ(thread.list.find(pool_number(1)), nullptr) << "given back";
  for (int pool : {0, 2, ThreadCacheList::kMax - 1, ThreadCacheList::kMax}) {
    EXPECT_EQ(thread.list.find(pool_number(pool)), cache_number(pool)) << pool;
  }
  EXPECT_EQ(thread.list.count, ThreadCacheList::kMax);
}

}  // namespace
}  // namespace vramshim::runtime
