// Thread caches keep the pool's rules: what a thread frees through its cache is handed out again
// (by the cache or the pool) only after a fence issued after the free; a stricter reuse mode
// reaches the blocks caches hold; a free from any thread and a bad free are handled as the pool
// handles them; a flush and a thread's exit give everything back. And the reason for caches: a
// thread that reuses its sizes allocates and frees without the device lock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "tests/unit/pool/cached_pool.h"

namespace vramshim::pool {
namespace {

using testing::CachedPool;

constexpr size_t kMiB = size_t{1} << 20;

CUstream stream(uintptr_t id) { return reinterpret_cast<CUstream>(id); }

CUdeviceptr allocate(CachedPool& t, size_t bytes) {
  CUdeviceptr ptr = 0;
  EXPECT_EQ(t.allocate(bytes, &ptr), CUDA_SUCCESS);
  return ptr;
}

void free_ok(CachedPool& t, CUdeviceptr ptr) {
  const FreeResult result = t.free(ptr);
  EXPECT_TRUE(result.owned);
  EXPECT_EQ(result.status, CUDA_SUCCESS);
}

TEST(ThreadCaches, AThreadReusingItsSizeGoesOnWhileAnotherThreadHoldsTheDeviceLock) {
  CachedPool t;
  constexpr size_t kBytes = 4096;
  constexpr int kPairsUnderTheLock = 32;
  // 1: the worker is ready (warm: its cache holds enough ready blocks); 2: the lock is held; 3:
  // done
  std::atomic<int> stage{0};
  bool warm = false;
  std::thread worker([&] {
    for (int i = 0; i < 1000 && t.mine()->ready_bytes() < kPairsUnderTheLock * kBytes; ++i) {
      free_ok(t, allocate(t, kBytes));
    }
    warm = t.mine()->ready_bytes() >= kPairsUnderTheLock * kBytes;
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
    for (int i = 0; warm && i < kPairsUnderTheLock; ++i) free_ok(t, allocate(t, kBytes));
    stage.store(3);
    t.close_mine();
  });
  while (stage.load() != 1) std::this_thread::yield();
  t.limit.device_lock().lock();
  stage.store(2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stage.load() != 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool went_on = stage.load() == 3;
  t.limit.device_lock().unlock();
  worker.join();
  EXPECT_TRUE(warm) << "the cache never held " << kPairsUnderTheLock << " ready blocks";
  EXPECT_TRUE(went_on) << "the cached pairs waited for the device lock";
  EXPECT_EQ(t.pool.stats().in_use_bytes, 0u);
}

TEST(ThreadCaches, ABlockFreedThroughACacheWaitsForItsFence) {
  CachedPool t;
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  for (int i = 0; i < 200; ++i) free_ok(t, allocate(t, 4096));  // a warm cache
  const CUdeviceptr a = allocate(t, 4096);
  t.fake.queue_work(side, a, 4096);
  free_ok(t, a);
  for (int i = 0; i < 2000; ++i) {
    const CUdeviceptr ptr = allocate(t, 4096);
    ASSERT_NE(ptr, a) << "handed out again while its last writer still runs, pair " << i;
    free_ok(t, ptr);
  }
  t.fake.finish_work(side);
  // Once the fence completed it is reused like any free block, when the free ones run out.
  bool came_back = false;
  std::vector<CUdeviceptr> held;
  for (int i = 0; i < 20000 && !came_back; ++i) {
    held.push_back(allocate(t, 4096));
    came_back = held.back() == a;
  }
  EXPECT_TRUE(came_back) << "never reused once its fence completed";
  for (CUdeviceptr ptr : held) free_ok(t, ptr);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
}

TEST(ThreadCaches, NoWorkOfANewOwnerRacesWithAnEarlierOwnersWriteAcrossThreads) {
  // Four threads allocate sizes their caches serve and sizes they do not, queue writes on random
  // streams, free their own blocks and each other's, and finish work at random; every write must
  // be ordered after every unfinished write of an earlier owner. Fails when a reuse rule is
  // removed for blocks that pass through caches.
  enum Variant { kBlockingOnly, kNonBlocking, kUnfenceable, kVariants };
  constexpr int kThreads = 4;
  const size_t kCachedSizes[] = {512, 4096, 65536, kMiB};
  for (int variant = 0; variant < kVariants; ++variant) {
    CachedPool t;
    std::vector<CUstream> streams = {CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, stream(0x901),
                                     stream(0x902), t.create_stream(CU_STREAM_DEFAULT)};
    if (variant != kBlockingOnly) {
      for (int i = 0; i < 2; ++i) streams.push_back(t.create_stream(CU_STREAM_NON_BLOCKING));
    }
    if (variant == kUnfenceable) t.pool.on_unfenceable_stream();
    testing::PassedBlocks passed;
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
      threads.emplace_back([&, id] {
        std::mt19937 rng(variant * 100 + id);
        std::vector<CUdeviceptr> live;
        for (int i = 0; i < 3000; ++i) {
          const size_t bytes = rng() % 10 < 7
                                   ? kCachedSizes[rng() % 4]
                                   : std::uniform_int_distribution<size_t>(1, 4 * kMiB)(rng);
          const CUdeviceptr ptr = allocate(t, bytes);
          t.fake.queue_work(streams[rng() % streams.size()], ptr, bytes);
          live.push_back(ptr);
          if (live.size() > 8 || rng() % 2 == 0) {
            const size_t index = rng() % live.size();
            if (rng() % 4 == 0) {
              passed.pass(live[index]);
            } else {
              free_ok(t, live[index]);
            }
            live.erase(live.begin() + index);
          }
          if (const CUdeviceptr theirs = passed.take()) free_ok(t, theirs);
          if (rng() % 5 == 0) t.fake.finish_work(streams[rng() % streams.size()]);
        }
        for (CUdeviceptr ptr : live) free_ok(t, ptr);
        t.close_mine();
      });
    }
    for (std::thread& thread : threads) thread.join();
    while (const CUdeviceptr ptr = passed.take()) free_ok(t, ptr);
    EXPECT_EQ(t.fake.counters().conflicts, 0u) << "variant " << variant;
    EXPECT_EQ(t.fake.counters().bad_free, 0u) << "variant " << variant;
    EXPECT_EQ(t.pool.stats().in_use_bytes, 0u) << "variant " << variant;
  }
}

TEST(ThreadCaches, ANonBlockingStreamMadeDuringACaptureSendsTheCachesReadyBlocksToTheFences) {
  // Blocks a legacy-stream marker made ready are ordered only for blocking streams. A cache full
  // of them, whose earlier owners' writes still run, must not hand them out for a new
  // non-blocking stream: outside a capture the pool synchronizes the context, inside one it cannot,
  // so the caches' ready blocks must wait for a fence like the pool's own free blocks.
  CachedPool t;
  const CUstream blocking = t.create_stream(CU_STREAM_DEFAULT);
  constexpr size_t kBytes = 4096;
  for (int round = 0; round < 3; ++round) {
    std::vector<CUdeviceptr> blocks;
    for (int i = 0; i < 64; ++i) {
      blocks.push_back(allocate(t, kBytes));
      t.fake.queue_work(blocking, blocks.back(), kBytes);
    }
    for (CUdeviceptr ptr : blocks) free_ok(t, ptr);
  }
  // Until the cache takes its freed blocks back (a marker makes them ready).
  std::vector<CUdeviceptr> kept;
  for (int i = 0; i < 200 && t.mine()->ready_bytes() == 0; ++i) kept.push_back(allocate(t, kBytes));
  ASSERT_GT(t.mine()->ready_bytes(), 0u);
  t.capture.on_capture_begin(nullptr, nullptr);
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  for (int i = 0; i < 64; ++i) {
    const CUdeviceptr ptr = allocate(t, kBytes);
    ASSERT_FALSE(t.fake.has_unfinished_write(ptr, kBytes)) << "allocation " << i;
    t.fake.queue_work(side, ptr, kBytes);
  }
  t.capture.on_capture_end(nullptr, nullptr);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  for (CUdeviceptr ptr : kept) free_ok(t, ptr);
}

TEST(ThreadCaches, AFreeFromAnotherThreadAndBadFreesOfCachedBlocks) {
  CachedPool t;
  for (int i = 0; i < 200; ++i) free_ok(t, allocate(t, 4096));
  // Another thread frees a block this thread's cache handed out.
  const CUdeviceptr mine = allocate(t, 4096);
  std::thread other([&] {
    free_ok(t, mine);
    t.close_mine();
  });
  other.join();
  FreeResult again = t.free(mine);
  EXPECT_TRUE(again.owned);
  EXPECT_EQ(again.status, CUDA_ERROR_INVALID_VALUE);
  // A double free of a block the cache took back, and a free inside a cached block.
  const CUdeviceptr freed = allocate(t, 4096);
  free_ok(t, freed);
  again = t.free(freed);
  EXPECT_TRUE(again.owned);
  EXPECT_EQ(again.status, CUDA_ERROR_INVALID_VALUE);
  const CUdeviceptr live = allocate(t, 4096);
  again = t.free(live + 512);
  EXPECT_TRUE(again.owned);
  EXPECT_EQ(again.status, CUDA_ERROR_INVALID_VALUE);
  // Nothing was handed out twice, nothing reached the driver.
  std::set<CUdeviceptr> handed{live};
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(handed.insert(allocate(t, 4096)).second) << "allocation " << i;
  }
  EXPECT_EQ(t.fake.counters().free, 0u);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
  EXPECT_EQ(t.pool.stats().in_use_bytes, handed.size() * 4096);
}

TEST(ThreadCaches, AFlushReleasesWhatEveryCacheKeeps) {
  CachedPool t;
  constexpr int kThreads = 3;
  std::atomic<int> warm{0};
  std::atomic<bool> flushed{false};
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      // Ready blocks of several sizes, and freed blocks still in the cache.
      for (int i = 0; i < 300; ++i) free_ok(t, allocate(t, size_t{4096} << (i % 3)));
      std::vector<CUdeviceptr> held;
      for (int i = 0; i < 20; ++i) held.push_back(allocate(t, 512 * (id + 1)));
      for (CUdeviceptr ptr : held) free_ok(t, ptr);
      EXPECT_GT(t.mine()->ready_bytes() + t.mine()->pending_bytes(), 0u);
      warm.fetch_add(1);
      while (!flushed.load()) std::this_thread::yield();
      t.close_mine();
    });
  }
  while (warm.load() != kThreads) std::this_thread::yield();
  const uint64_t reserved = t.pool.stats().reserved_bytes;
  EXPECT_GT(reserved, 0u);
  EXPECT_EQ(t.pool.flush().segment_bytes, reserved);
  EXPECT_EQ(t.fake.live_bytes(), 0u);
  flushed.store(true);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(t.pool.stats().reserved_bytes, 0u);
}

TEST(ThreadCaches, AContextTornDownWhileItsCachesHoldBlocksForgetsThemAll) {
  CachedPool t;
  for (int i = 0; i < 300; ++i) free_ok(t, allocate(t, 4096));
  const CUdeviceptr handed = allocate(t, 4096);
  free_ok(t, allocate(t, 4096));  // one freed into the cache
  ASSERT_GT(t.mine()->ready_bytes(), 0u);
  t.pool.drop();
  // The driver frees what was live with the context; the pool keeps nothing of it.
  const PoolStats stats = t.pool.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(t.mine()->ready_bytes() + t.mine()->pending_bytes(), 0u);
  EXPECT_FALSE(t.free(handed).owned);
  // The thread's cache stays its own and serves the pool's next blocks.
  std::set<CUdeviceptr> fresh;
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(fresh.insert(allocate(t, 4096)).second);
  for (CUdeviceptr ptr : fresh) free_ok(t, ptr);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
}

TEST(ThreadCaches, AThreadThatEndsGivesItsCacheBackAndTheNextThreadGetsIt) {
  CachedPool t;
  ThreadCache* first = nullptr;
  std::thread([&] {
    first = t.mine();
    for (int i = 0; i < 300; ++i) free_ok(t, allocate(t, 8192));
    t.close_mine();
  }).join();
  // Everything the cache kept is the pool's again: a flush finds every segment free.
  const PoolStats stats = t.pool.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(t.pool.reclaimable_bytes(), stats.reserved_bytes);
  ThreadCache* second = nullptr;
  std::thread([&] {
    second = t.mine();
    t.close_mine();
  }).join();
  EXPECT_EQ(second, first);
  EXPECT_EQ(t.pool.flush().segment_bytes, stats.reserved_bytes);
}

TEST(ThreadCaches, NoneWithThemOffOrThePoolOff) {
  PoolOptions off;
  off.thread_caches = false;  // VRAMSHIM_THREAD_CACHE=off
  EXPECT_EQ(CachedPool(off).pool.open_thread_cache(), nullptr);
  PoolOptions unpooled;
  unpooled.enabled = false;  // VRAMSHIM_POOL=off
  EXPECT_EQ(CachedPool(unpooled).pool.open_thread_cache(), nullptr);
  EXPECT_NE(CachedPool().pool.open_thread_cache(), nullptr);
}

}  // namespace
}  // namespace vramshim::pool
