#include "shim/pool/pool_registry.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "tests/unit/pool/fake_device_api.h"

namespace vramshim::pool {
namespace {

using testing::FakeDeviceApi;
using testing::ForwardingDeviceApi;

constexpr size_t kMiB = size_t{1} << 20;

CUcontext context(uintptr_t id) { return reinterpret_cast<CUcontext>(id); }

struct RegistryUnderTest {
  explicit RegistryUnderTest(PoolOptions options = {}) : registry(options, capture) {}
  CachingPool* pool(CUcontext ctx, FakeDeviceApi& fake, int device = 0) {
    return registry.find_or_create(ctx, device,
                                   [&] { return std::make_unique<ForwardingDeviceApi>(fake); });
  }
  CaptureState capture;
  FakeDeviceApi first;
  FakeDeviceApi second;
  PoolRegistry registry;
};

CUdeviceptr allocate(CachingPool* pool, size_t bytes) {
  CUdeviceptr ptr = 0;
  EXPECT_EQ(pool->allocate(bytes, &ptr), CUDA_SUCCESS);
  return ptr;
}

TEST(PoolRegistry, TwoContextsHaveTheirOwnPools) {
  RegistryUnderTest t;
  EXPECT_EQ(t.registry.find(context(0x10)), nullptr);
  CachingPool* a = t.pool(context(0x10), t.first);
  CachingPool* b = t.pool(context(0x20), t.second);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.registry.find(context(0x10)), a);
  EXPECT_EQ(t.pool(context(0x10), t.first), a);
  const CUdeviceptr pa = allocate(a, 4 * kMiB);
  allocate(b, 8 * kMiB);
  EXPECT_FALSE(b->holds(pa));
  EXPECT_EQ(t.first.counters().allocate, 1u);
  EXPECT_EQ(t.second.counters().allocate, 1u);
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].stats.in_use_bytes, 12 * kMiB);
  EXPECT_EQ(devices[0].stats.driver_alloc_calls, 2u);
}

TEST(PoolRegistry, ContextsOnDifferentDevicesAreCountedApart) {
  RegistryUnderTest t;
  allocate(t.pool(context(0x10), t.first, 0), kMiB);
  allocate(t.pool(context(0x20), t.second, 1), 2 * kMiB);
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  ASSERT_EQ(devices.size(), 2u);
  for (const DeviceStats& device : devices) {
    EXPECT_EQ(device.stats.in_use_bytes, device.device == 0 ? kMiB : 2 * kMiB);
  }
}

TEST(PoolRegistry, RemovingAContextDropsItsPool) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  const CUdeviceptr live = allocate(pool, 32 * kMiB);
  pool->free(allocate(pool, 32 * kMiB));
  t.registry.remove(context(0x10));
  EXPECT_EQ(t.registry.find(context(0x10)), nullptr);
  EXPECT_EQ(t.first.live_bytes(), 32 * kMiB);
  t.first.destroy_context();
  EXPECT_EQ(t.first.counters().bad_free, 0u);
  (void)live;
  // The driver may hand out the same context handle again.
  CachingPool* again = t.pool(context(0x10), t.first);
  ASSERT_NE(again, nullptr);
  again->free(allocate(again, kMiB));
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  EXPECT_EQ(devices[0].stats.driver_alloc_calls, 3u);  // the dropped pool's figures remain
}

// Contexts made and destroyed one after another, each at a new address (cuCtxCreate in a loop):
// every one gets a pool, however many came before.
TEST(PoolRegistry, ContextsOneAfterAnotherAtNewAddressesAreAllPooled) {
  RegistryUnderTest t;
  constexpr uintptr_t kContexts = 4 * PoolRegistry::kMaxContexts;
  for (uintptr_t i = 1; i <= kContexts; ++i) {
    CachingPool* pool = t.pool(context(i * 0x1000), t.first);
    ASSERT_NE(pool, nullptr) << "context " << i;
    pool->free(allocate(pool, 4096));
    t.registry.remove(context(i * 0x1000));
    EXPECT_EQ(t.registry.find(context(i * 0x1000)), nullptr);
    t.first.destroy_context();
  }
  EXPECT_EQ(t.registry.stats_by_device()[0].stats.driver_alloc_calls, kContexts);
}

// Only as many contexts as the table has slots have pools at once; a removed one's slot serves a
// new context, and the contexts still there keep their pools.
TEST(PoolRegistry, AFullTableTakesANewContextOnceOneIsRemoved) {
  RegistryUnderTest t;
  std::vector<CachingPool*> pools;
  for (uintptr_t i = 1; i <= PoolRegistry::kMaxContexts; ++i) {
    pools.push_back(t.pool(context(i * 0x1000), t.first));
    ASSERT_NE(pools.back(), nullptr) << "context " << i;
  }
  const CUcontext late = context(0x7777000);
  EXPECT_EQ(t.pool(late, t.first), nullptr);
  t.registry.remove(context(5 * 0x1000));
  CachingPool* pool = t.pool(late, t.first);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(t.registry.find(late), pool);
  EXPECT_EQ(t.registry.find(context(5 * 0x1000)), nullptr);
  for (uintptr_t i = 1; i <= PoolRegistry::kMaxContexts; ++i) {
    if (i != 5) {
      EXPECT_EQ(t.registry.find(context(i * 0x1000)), pools[i - 1]) << "context " << i;
    }
  }
  // The removed context comes back: it needs a slot of its own again, and none is free.
  EXPECT_EQ(t.pool(context(5 * 0x1000), t.first), nullptr);
}

// Lookups while other contexts come and go through the same slots: a find answers its own
// context's pool or none, never the pool of a context that took a removed one's slot.
TEST(PoolRegistry, AFindNeverAnswersAnotherContextsPool) {
  RegistryUnderTest t;
  // More contexts than slots, so that every slot changes hands.
  constexpr uintptr_t kContexts = PoolRegistry::kMaxContexts + 64;
  std::atomic<bool> done{false};
  std::vector<std::pair<CUcontext, CachingPool*>> seen;
  std::thread reader([&] {
    for (uintptr_t i = 0; !done.load(std::memory_order_relaxed); i = (i + 1) % kContexts) {
      const CUcontext ctx = context((i + 1) * 0x1000);
      if (CachingPool* pool = t.registry.find(ctx)) seen.emplace_back(ctx, pool);
    }
  });
  std::vector<std::pair<CUcontext, CachingPool*>> made;
  for (int round = 0; round < 20; ++round) {
    for (uintptr_t i = 1; i <= kContexts; ++i) {
      if (CachingPool* pool = t.pool(context(i * 0x1000), t.first)) {
        made.emplace_back(context(i * 0x1000), pool);
      }
      // Keeps a few contexts at a time, so that the slots of removed ones are taken over.
      if (i > 3) t.registry.remove(context((i - 3) * 0x1000));
    }
    for (uintptr_t i = kContexts - 2; i <= kContexts; ++i) t.registry.remove(context(i * 0x1000));
  }
  done = true;
  reader.join();
  std::sort(made.begin(), made.end());
  for (const auto& answer : seen) {
    ASSERT_TRUE(std::binary_search(made.begin(), made.end(), answer))
        << "find(" << answer.first << ") answered another context's pool";
  }
}

// A context reset between the steps of a job (cudaDeviceReset): the device's peaks are the larger
// of the contexts that came one after the other, not their sum; while two contexts live together
// their peaks add up (an upper bound).
TEST(PoolRegistry, PeaksOfContextsThatCameOneAfterTheOtherAreNotAdded) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  pool->free(allocate(pool, 256 * kMiB));
  t.registry.remove(context(0x10));
  t.first.destroy_context();
  CachingPool* again = t.pool(context(0x10), t.first);
  const CUdeviceptr held = allocate(again, 64 * kMiB);
  std::vector<DeviceStats> devices = t.registry.stats_by_device();
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, 256 * kMiB);
  EXPECT_EQ(devices[0].stats.in_use_bytes, 64 * kMiB);
  CachingPool* beside = t.pool(context(0x20), t.second);
  allocate(beside, 200 * kMiB);
  devices = t.registry.stats_by_device();
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, 264 * kMiB);  // 64 + 200, above 256
  // One of two contexts that lived together ends: still added, never less than the true peak.
  t.registry.remove(context(0x20));
  devices = t.registry.stats_by_device();
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, 264 * kMiB);
  again->free(held);
}

// Two contexts of a device alive together, their peaks at different times: the device's peak is
// the most it held at once (a cuCtxCreate context beside the primary one read 332.9 MiB for a
// 324.9 MiB peak: the pools' peaks added up).
TEST(PoolRegistry, ADevicesPeakIsTheMostItsContextsHeldAtOnce) {
  RegistryUnderTest t;
  CachingPool* primary = t.pool(context(0x10), t.first);
  CachingPool* created = t.pool(context(0x20), t.second);
  primary->free(allocate(primary, 300 * kMiB));
  EXPECT_EQ(primary->trim(0), 300 * kMiB);  // handed back before the other context allocates
  const CUdeviceptr held = allocate(created, 8 * kMiB);
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, 300 * kMiB);
  EXPECT_EQ(devices[0].stats.peak_reserved_bytes, 300 * kMiB);
  EXPECT_EQ(devices[0].stats.in_use_bytes, 8 * kMiB);
  created->free(held);
}

// A thread's frees to its cache leave the device's bytes in use counted high (its credit) until
// they are folded back: an allocation elsewhere that passes the peak as counted, but not once
// folded, left the peak at the lower figure (10 MiB held, 3 freed, 1 allocated: 8 MiB).
TEST(PoolRegistry, ADevicesPeakStaysWhileThreadCachesHoldCredit) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  ThreadCache* cache = pool->open_thread_cache();
  ASSERT_NE(cache, nullptr);
  std::vector<CUdeviceptr> blocks(40);
  for (CUdeviceptr& ptr : blocks) {
    ASSERT_EQ(pool->allocate(256 << 10, &ptr, 0, nullptr, cache), CUDA_SUCCESS);
  }
  for (size_t i = 0; i < 12; ++i) EXPECT_TRUE(pool->free(blocks[i], cache).owned);
  const CUdeviceptr elsewhere = allocate(pool, kMiB);
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, 10 * kMiB);
  EXPECT_EQ(devices[0].stats.in_use_bytes, 8 * kMiB);
  pool->free(elsewhere);
  for (size_t i = 12; i < blocks.size(); ++i) pool->free(blocks[i], cache);
  pool->close_thread_cache(*cache);
}

// A context reset in a loop (cudaDeviceReset between the tests of a suite): each dropped pool
// keeps only its empty shell (it kept its free bins' classes, about 50 KB), and its figures stay
// in its device's.
TEST(PoolRegistry, AContextResetInALoopKeepsLittleOfEachPool) {
  RegistryUnderTest t;
  const auto reset_cycle = [&t] {
    CachingPool* pool = t.pool(context(0x10), t.first);
    pool->free(allocate(pool, 4096));
    pool->free(allocate(pool, kMiB));
    t.registry.remove(context(0x10));
    t.first.destroy_context();
  };
  for (int i = 0; i < 100; ++i) reset_cycle();
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 1000; ++i) reset_cycle();
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT((after - std::min(after, before)) / 1000, size_t{8192}) << "bytes kept per cycle";
  const std::vector<DeviceStats> devices = t.registry.stats_by_device();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].stats.pool_hits + devices[0].stats.pool_misses, 2200u);
  EXPECT_EQ(devices[0].stats.driver_alloc_calls, devices[0].stats.driver_free_calls);
  EXPECT_EQ(devices[0].stats.peak_in_use_bytes, kMiB);  // one context at a time: not added
}

// A context without a pool (created, never allocating) still reaches the memory of the pools of
// its device: they synchronize it too until it is destroyed; pools of other devices do not.
TEST(PoolRegistry, TheOtherContextsOfADeviceAreSynchronizedUntilTheyAreDestroyed) {
  RegistryUnderTest t;
  const CUcontext other = context(0x30);
  t.registry.add_context(other, 0);
  CachingPool* same_device = t.pool(context(0x10), t.first, 0);
  CachingPool* other_device = t.pool(context(0x20), t.second, 1);
  const CUstream others_stream = reinterpret_cast<CUstream>(0x9a0);
  t.first.make_other_context_stream(others_stream, other);
  const CUdeviceptr a = allocate(same_device, 32 * kMiB);
  t.first.queue_work(others_stream, a, 32 * kMiB);
  same_device->free(a);
  EXPECT_EQ(allocate(same_device, 32 * kMiB), a);
  EXPECT_FALSE(t.first.has_unfinished_write(a, 32 * kMiB));
  EXPECT_EQ(t.first.counters().synchronize_other_context, 1u);
  other_device->free(allocate(other_device, 32 * kMiB));
  EXPECT_NE(allocate(other_device, 32 * kMiB), 0u);
  EXPECT_EQ(t.second.counters().synchronize_other_context, 0u);
  EXPECT_EQ(t.second.counters().synchronize_context, 0u);

  same_device->free(a);
  t.registry.remove(other);  // synchronized once more while it may still run work
  EXPECT_EQ(t.first.counters().synchronize_other_context, 2u);
  const CUdeviceptr b = allocate(same_device, 32 * kMiB);
  same_device->free(b);
  EXPECT_EQ(allocate(same_device, 32 * kMiB), b);  // a legacy marker suffices again
  EXPECT_EQ(t.first.counters().synchronize_other_context, 2u);
}

TEST(PoolRegistry, LimitAppliesPerDeviceAndShowsInMemGetInfo) {
  PoolOptions options;
  options.limit_bytes = 100 * kMiB;
  RegistryUnderTest t(options);
  CachingPool* a = t.pool(context(0x10), t.first);
  CachingPool* b = t.pool(context(0x20), t.second);
  allocate(a, 60 * kMiB);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(b->allocate(50 * kMiB, &ptr), CUDA_ERROR_OUT_OF_MEMORY);
  const MemInfo info = t.registry.mem_get_info(0, {uint64_t{70} << 30, uint64_t{80} << 30});
  EXPECT_EQ(info.total, 100 * kMiB);
  EXPECT_EQ(info.free, 40 * kMiB);
  EXPECT_EQ(t.registry.device_total_mem(0, uint64_t{80} << 30), 100 * kMiB);
  t.registry.set_limit(std::nullopt);
  EXPECT_EQ(b->allocate(50 * kMiB, &ptr), CUDA_SUCCESS);
  EXPECT_EQ(t.registry.device_total_mem(0, uint64_t{80} << 30), uint64_t{80} << 30);
}

// One limit for every node (100 GiB) on a smaller device: the total the frameworks size themselves
// by stays the device's (it read 100 GiB on an 80 GiB device).
TEST(PoolRegistry, ALimitAboveTheDeviceLeavesItsTotal) {
  PoolOptions options;
  options.limit_bytes = uint64_t{100} << 30;
  RegistryUnderTest t(options);
  t.pool(context(0x10), t.first);
  const MemInfo info = t.registry.mem_get_info(0, {uint64_t{70} << 30, uint64_t{80} << 30});
  EXPECT_EQ(info.total, uint64_t{80} << 30);
  EXPECT_EQ(info.free, uint64_t{70} << 30);
  EXPECT_EQ(t.registry.device_total_mem(0, uint64_t{80} << 30), uint64_t{80} << 30);
}

TEST(PoolRegistry, MemGetInfoCountsCachedBytesAsFree) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  pool->free(allocate(pool, 64 * kMiB));
  const MemInfo info = t.registry.mem_get_info(0, {kMiB * 1000, kMiB * 2000});
  EXPECT_EQ(info.free, kMiB * 1064);
  EXPECT_EQ(info.total, kMiB * 2000);
}

TEST(PoolRegistry, FlushAllReleasesEveryContextsCache) {
  RegistryUnderTest t;
  CachingPool* a = t.pool(context(0x10), t.first);
  CachingPool* b = t.pool(context(0x20), t.second);
  a->free(allocate(a, 32 * kMiB));
  b->free(allocate(b, 12 * kMiB));
  EXPECT_EQ(t.registry.flush_all().segment_bytes, 44 * kMiB);
  EXPECT_EQ(t.first.live_bytes() + t.second.live_bytes(), 0u);
  EXPECT_EQ(t.first.counters().trim, 1u);
  EXPECT_EQ(t.first.counters().push, t.first.counters().pop);
}

TEST(PoolRegistry, TrimKeepsAtMostTheRequestedCache) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  std::vector<CUdeviceptr> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocate(pool, 16 * kMiB));
  for (CUdeviceptr ptr : blocks) pool->free(ptr);
  EXPECT_EQ(t.registry.trim_all(40 * kMiB), 32 * kMiB);
  EXPECT_EQ(pool->stats().cached_bytes, 32 * kMiB);
}

TEST(PoolRegistry, ForkChildForgetsEverythingAndCallsNothing) {
  RegistryUnderTest t;
  CachingPool* pool = t.pool(context(0x10), t.first);
  allocate(pool, 4 * kMiB);
  pool->free(allocate(pool, 32 * kMiB));
  const FakeDeviceApi::Counters before = t.first.counters();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    t.registry.reset_after_fork();
    const FakeDeviceApi::Counters after = t.first.counters();
    bool ok = t.registry.find(context(0x10)) == nullptr && after.allocate == before.allocate &&
              after.free == before.free && after.synchronize_context == 0;
    const std::vector<DeviceStats> devices = t.registry.stats_by_device();
    ok = ok && (devices.empty() || devices[0].stats.in_use_bytes == 0);
    CachingPool* fresh = t.pool(context(0x10), t.second);
    CUdeviceptr ptr = 0;
    ok = ok && fresh != nullptr && fresh != pool && fresh->allocate(kMiB, &ptr) == CUDA_SUCCESS;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace vramshim::pool
