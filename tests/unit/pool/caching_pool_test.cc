#include "shim/pool/caching_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tests/unit/pool/fake_device_api.h"
#include "tests/unit/pool/training_workload.h"

namespace vramshim::pool {
namespace {

using testing::FakeDeviceApi;

constexpr size_t kMiB = size_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

CUstream stream(uintptr_t id) { return reinterpret_cast<CUstream>(id); }

// One pool on a fake context.
struct PoolUnderTest {
  explicit PoolUnderTest(PoolOptions options = {}, uint64_t capacity = 80 * kGiB)
      : fake(capacity, &capture), limit(options.limit_bytes), pool(fake, options, limit, capture) {}

  CUdeviceptr allocate(size_t bytes) {
    CUdeviceptr ptr = 0;
    EXPECT_EQ(pool.allocate(bytes, &ptr), CUDA_SUCCESS);
    return ptr;
  }
  void free(CUdeviceptr ptr) {
    const FreeResult result = pool.free(ptr);
    EXPECT_TRUE(result.owned);
    EXPECT_EQ(result.status, CUDA_SUCCESS);
  }

  CaptureState capture;
  FakeDeviceApi fake;
  DeviceLimit limit;
  CachingPool pool;
};

TEST(CachingPool, TenThousandPairsOfOneSizeNeedAtMostTwoDriverAllocations) {
  for (size_t bytes : {size_t{1000}, 3 * kMiB, 50 * kMiB}) {
    PoolUnderTest t;
    for (int i = 0; i < 10000; ++i) t.free(t.allocate(bytes));
    EXPECT_LE(t.fake.counters().allocate, 2u) << bytes;
    EXPECT_EQ(t.pool.stats().pool_hits, 10000 - t.pool.stats().pool_misses);
  }
}

TEST(CachingPool, TrainingReplayReusesMemoryAndStaysCloseToPeakInUse) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const std::vector<testing::WorkloadOp> ops = testing::training_workload(seed, 100);
    const size_t requests = testing::count_allocations(ops);
    ASSERT_EQ(requests, 175u * 100);
    PoolUnderTest t;
    std::unordered_map<uint32_t, CUdeviceptr> live;
    for (const testing::WorkloadOp& op : ops) {
      if (op.allocate) {
        live[op.id] = t.allocate(op.bytes);
      } else {
        t.free(live.at(op.id));
        live.erase(op.id);
      }
    }
    const PoolStats stats = t.pool.stats();
    EXPECT_EQ(stats.peak_in_use_bytes, testing::peak_live_bytes(ops, 512));
    EXPECT_LE(stats.driver_alloc_calls * 50, requests) << "seed " << seed;  // at most 2 %
    EXPECT_LE(stats.peak_reserved_bytes * 10, stats.peak_in_use_bytes * 11)
        << "seed " << seed << ": " << stats.peak_reserved_bytes << " reserved at peak for "
        << stats.peak_in_use_bytes;
  }
}

TEST(CachingPool, FreedBlockWaitsForItsFenceWhenANonBlockingStreamExists) {
  PoolUnderTest t;
  const CUstream side = stream(0x100);
  t.pool.on_stream_created(side, CU_STREAM_NON_BLOCKING);
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(side, a, 32 * kMiB);
  t.free(a);
  const CUdeviceptr b = t.allocate(32 * kMiB);
  EXPECT_NE(b, a);                                // a's fence has not completed
  EXPECT_GE(t.fake.counters().record_event, 2u);  // the side stream and the legacy stream
  t.fake.finish_work(side);
  const CUdeviceptr c = t.allocate(32 * kMiB);
  EXPECT_EQ(c, a);
  EXPECT_EQ(t.fake.counters().allocate, 2u);
  EXPECT_EQ(t.fake.counters().synchronize_context, 0u);
  EXPECT_EQ(t.fake.counters().synchronize_event, 0u);
}

TEST(CachingPool, ReusesAtOnceWithTheLegacyStreamAndOneBlockingStream) {
  PoolUnderTest t;
  t.pool.on_stream_created(stream(0x100), CU_STREAM_DEFAULT);
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.record_event + counters.query_event + counters.synchronize_context, 0u);
}

TEST(CachingPool, ASecondBlockingStreamEndsImmediateReuse) {
  PoolUnderTest t;
  t.pool.on_stream_created(stream(0x100), CU_STREAM_DEFAULT);
  t.pool.on_stream_created(stream(0x200), CU_STREAM_DEFAULT);
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(stream(0x200), a, 32 * kMiB);
  t.free(a);
  EXPECT_NE(t.allocate(32 * kMiB), a);
}

TEST(CachingPool, SwitchingFromImmediateReuseSynchronizesOnce) {
  PoolUnderTest t;
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);  // reused at once: only the legacy stream exists
  t.pool.on_stream_created(stream(0x100), CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(t.fake.counters().synchronize_context, 1u);
  EXPECT_FALSE(t.fake.has_unfinished_write(a, 32 * kMiB));
  EXPECT_EQ(t.allocate(32 * kMiB), a);
}

TEST(CachingPool, PerThreadStreamFencesWithOneContextSynchronize) {
  PoolUnderTest t;
  t.pool.on_per_thread_stream_used();
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_PER_THREAD, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.synchronize_context, 1u);
  EXPECT_EQ(counters.record_event, 0u);
  EXPECT_EQ(counters.allocate, 1u);
}

TEST(CachingPool, PastThePendingBoundWaitsOnTheOldestFenceOnly) {
  PoolOptions options;
  options.max_pending_bytes = 64 * kMiB;
  PoolUnderTest t(options);
  const CUstream side = stream(0x100);
  t.pool.on_stream_created(side, CU_STREAM_NON_BLOCKING);
  std::vector<CUdeviceptr> seen;
  for (int i = 0; i < 4; ++i) {
    const CUdeviceptr ptr = t.allocate(32 * kMiB);
    seen.push_back(ptr);
    t.fake.queue_work(side, ptr, 32 * kMiB);
    t.free(ptr);
  }
  // 32, 64 MiB pending: grow. 96 MiB pending passes the bound: wait for the oldest fence.
  EXPECT_EQ(t.fake.counters().allocate, 3u);
  EXPECT_EQ(seen[3], seen[0]);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_GE(counters.synchronize_event, 1u);
  EXPECT_EQ(counters.synchronize_context, 0u);
  EXPECT_EQ(t.pool.stats().synchronizations, 1u);
}

TEST(CachingPool, NeverHandsOutMemoryThatQueuedWorkStillWrites) {
  // Random sizes, delays and streams: after every allocation, no unfinished write of an earlier
  // owner may touch the block. Fails when the fence rule is removed.
  for (int variant = 0; variant < 3; ++variant) {
    PoolUnderTest t;
    std::vector<CUstream> streams = {CU_STREAM_LEGACY};
    const int side_streams = variant == 0 ? 1 : 3;
    for (int i = 0; i < side_streams; ++i) {
      streams.push_back(stream(0x100 * (i + 1)));
      t.pool.on_stream_created(streams.back(), CU_STREAM_NON_BLOCKING);
    }
    if (variant == 2) t.pool.on_per_thread_stream_used();
    std::mt19937 rng(variant);
    std::vector<std::pair<CUdeviceptr, size_t>> live;
    for (int i = 0; i < 3000; ++i) {
      const size_t bytes = std::uniform_int_distribution<size_t>(1, 8 * kMiB)(rng);
      const CUdeviceptr ptr = t.allocate(bytes);
      ASSERT_FALSE(t.fake.has_unfinished_write(ptr, bytes)) << "step " << i;
      const CUstream on = streams[rng() % streams.size()];
      t.fake.queue_work(on, ptr, bytes);
      live.emplace_back(ptr, bytes);
      if (live.size() > 8 || rng() % 2 == 0) {
        const size_t index = rng() % live.size();
        t.free(live[index].first);
        live.erase(live.begin() + index);
      }
      if (rng() % 5 == 0) t.fake.finish_work(streams[rng() % streams.size()]);
    }
  }
}

TEST(CachingPool, OutOfMemoryReleasesTheCacheAndRetries) {
  PoolUnderTest t(PoolOptions{}, kGiB);
  std::vector<CUdeviceptr> blocks;
  for (int i = 0; i < 700; ++i) blocks.push_back(t.allocate(kMiB));
  for (CUdeviceptr ptr : blocks) t.free(ptr);
  EXPECT_EQ(t.pool.stats().cached_bytes, 700 * kMiB);
  const CUdeviceptr big = t.allocate(600 * kMiB);
  EXPECT_NE(big, 0u);
  EXPECT_EQ(t.pool.stats().released_by_oom_bytes, 700 * kMiB);
  EXPECT_EQ(t.fake.live_bytes(), 600 * kMiB);
}

TEST(CachingPool, OutOfMemoryCompletesPendingFencesFirst) {
  PoolUnderTest t(PoolOptions{}, kGiB);
  const CUstream side = stream(0x100);
  t.pool.on_stream_created(side, CU_STREAM_NON_BLOCKING);
  const CUdeviceptr a = t.allocate(100 * kMiB);
  const CUdeviceptr held = t.allocate(850 * kMiB);
  t.fake.queue_work(side, a, 100 * kMiB);
  t.free(a);  // pending, and under the pending bound: the pool would rather grow
  EXPECT_EQ(t.allocate(100 * kMiB), a);
  EXPECT_EQ(t.fake.counters().failed_allocate, 1u);
  EXPECT_EQ(t.fake.counters().synchronize_context, 1u);
  EXPECT_EQ(t.pool.stats().pool_hits, 1u);
  t.free(held);
}

TEST(CachingPool, OutOfMemoryWhenTheDeviceIsReallyFull) {
  PoolUnderTest t(PoolOptions{}, kGiB);
  const CUdeviceptr held = t.allocate(900 * kMiB);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(t.pool.allocate(200 * kMiB, &ptr), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(t.fake.live_bytes(), 900 * kMiB);
  t.free(held);
}

TEST(CachingPool, ASegmentTooLargeForTheDeviceFallsBackToTheExactSize) {
  // 2 MiB segments do not fit in 1.5 MiB, the 1 MiB request itself does.
  PoolUnderTest t(PoolOptions{}, kMiB + kMiB / 2);
  EXPECT_NE(t.allocate(kMiB), 0u);
}

TEST(CachingPool, LimitCapsBytesInUse) {
  PoolOptions options;
  options.limit_bytes = 100 * kMiB;
  PoolUnderTest t(options);
  const CUdeviceptr a = t.allocate(60 * kMiB);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(t.pool.allocate(50 * kMiB, &ptr), CUDA_ERROR_OUT_OF_MEMORY);
  t.free(a);
  const CUdeviceptr b = t.allocate(50 * kMiB);
  EXPECT_EQ(t.pool.stats().limit_bytes, 100 * kMiB);
  t.pool.set_limit(std::nullopt);
  EXPECT_NE(t.allocate(80 * kMiB), 0u);
  t.free(b);
}

TEST(CachingPool, MaxCachedHandsBackFreeSegments) {
  PoolOptions options;
  options.max_cached_bytes = 32 * kMiB;
  PoolUnderTest t(options);
  std::vector<CUdeviceptr> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(t.allocate(30 * kMiB));
  for (CUdeviceptr ptr : blocks) t.free(ptr);
  EXPECT_EQ(t.fake.counters().free, 3u);
  EXPECT_EQ(t.pool.stats().reserved_bytes, 30 * kMiB);
}

TEST(CachingPool, IdleReleaseHandsBackFreeMemoryAfterTheIdlePeriod) {
  PoolOptions options;
  options.idle_release = std::chrono::seconds(10);
  PoolUnderTest t(options);
  const auto start = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const CUdeviceptr kept = t.allocate(4 * kMiB);
  t.free(t.allocate(32 * kMiB));
  EXPECT_EQ(t.pool.release_if_idle(start), 0u);
  EXPECT_EQ(t.pool.release_if_idle(start + std::chrono::seconds(5)), 0u);
  t.free(t.allocate(32 * kMiB));  // activity restarts the idle period
  EXPECT_EQ(t.pool.release_if_idle(start + std::chrono::seconds(12)), 0u);
  EXPECT_EQ(t.pool.release_if_idle(start + std::chrono::seconds(23)), 32 * kMiB);
  const PoolStats stats = t.pool.stats();
  EXPECT_EQ(stats.released_by_idle_bytes, 32 * kMiB);
  EXPECT_EQ(stats.reserved_bytes, 20 * kMiB);  // the live block's segment stays
  t.free(kept);
}

TEST(CachingPool, FlushWhileFourThreadsAllocate) {
  PoolUnderTest t;
  t.pool.on_stream_created(stream(0x100), CU_STREAM_NON_BLOCKING);
  // A high-water mark above anything the threads hold at once, so only flushes hand memory back.
  t.free(t.allocate(kGiB));
  std::atomic<bool> stop{false};
  std::vector<std::vector<CUdeviceptr>> kept(4);
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(id);
      std::vector<CUdeviceptr> live;
      while (!stop.load()) {
        const size_t bytes = std::uniform_int_distribution<size_t>(1, 24 * kMiB)(rng);
        CUdeviceptr ptr = 0;
        ASSERT_EQ(t.pool.allocate(bytes, &ptr), CUDA_SUCCESS);
        live.push_back(ptr);
        if (live.size() > 6) {
          const size_t index = rng() % live.size();
          ASSERT_TRUE(t.pool.free(live[index]).owned);
          live.erase(live.begin() + index);
        }
      }
      kept[id] = live;
    });
  }
  uint64_t released = 0;
  for (int i = 0; i < 50; ++i) {
    released += t.pool.flush().segment_bytes;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  released += t.pool.flush().segment_bytes;

  EXPECT_EQ(released, t.fake.freed_bytes());
  EXPECT_EQ(t.pool.stats().released_by_flush_bytes, released);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
  // Afterwards the pool holds exactly the segments of the blocks still live.
  uint64_t held = 0;
  std::vector<CUdeviceptr> segments;
  for (const auto& live : kept) {
    for (CUdeviceptr ptr : live) {
      const auto allocation = t.fake.allocation_containing(ptr);
      ASSERT_TRUE(allocation.has_value());
      if (std::find(segments.begin(), segments.end(), allocation->ptr) == segments.end()) {
        segments.push_back(allocation->ptr);
        held += allocation->size;
      }
    }
  }
  EXPECT_EQ(t.pool.stats().reserved_bytes, held);
  EXPECT_EQ(t.fake.live_bytes(), held);
}

TEST(CachingPool, CaptureIsLeftAloneAndFlushWaitsForItsEnd) {
  PoolUnderTest t;
  t.pool.on_stream_created(stream(0x100), CU_STREAM_NON_BLOCKING);
  const CUdeviceptr before = t.allocate(8 * kMiB);
  t.fake.queue_work(stream(0x100), before, 8 * kMiB);
  t.capture.on_capture_begin();
  t.free(before);
  std::vector<CUdeviceptr> during;
  for (int i = 0; i < 20; ++i) during.push_back(t.allocate(8 * kMiB));
  for (CUdeviceptr ptr : during) t.free(ptr);
  EXPECT_EQ(std::count(during.begin(), during.end(), before), 0);

  std::atomic<bool> flushed{false};
  std::thread flusher([&] {
    t.pool.flush();
    flushed.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(flushed.load());
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  t.capture.on_capture_end();
  flusher.join();
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  EXPECT_EQ(t.pool.stats().reserved_bytes, 0u);
  EXPECT_EQ(t.fake.live_bytes(), 0u);
}

TEST(CachingPool, DropFreesCachedSegmentsAndForgetsLiveOnes) {
  PoolUnderTest t;
  t.pool.on_stream_created(stream(0x100), CU_STREAM_NON_BLOCKING);
  const CUdeviceptr live = t.allocate(32 * kMiB);
  const CUdeviceptr cached = t.allocate(32 * kMiB);
  t.free(cached);
  t.free(t.allocate(32 * kMiB));  // issues a fence, so the pool holds events
  t.pool.drop();
  EXPECT_EQ(t.fake.live_bytes(), 32 * kMiB);  // the live block's segment, left to the driver
  EXPECT_EQ(t.fake.live_event_count(), 0u);
  EXPECT_FALSE(t.pool.owns(live));
  t.fake.destroy_context();
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
  const PoolStats stats = t.pool.stats();
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(t.limit.in_use(), 0u);
  // The pool starts afresh.
  t.free(t.allocate(kMiB));
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
}

TEST(CachingPool, PoolOffSendsEveryCallToTheDriverAndKeepsStatistics) {
  PoolOptions options;
  options.enabled = false;
  PoolUnderTest t(options);
  for (int i = 0; i < 10; ++i) t.free(t.allocate(1000));
  const CUdeviceptr held = t.allocate(3 * kMiB);
  const PoolStats stats = t.pool.stats();
  EXPECT_EQ(t.fake.counters().allocate, 11u);
  EXPECT_EQ(t.fake.counters().free, 10u);
  EXPECT_EQ(stats.driver_alloc_calls, 11u);
  EXPECT_EQ(stats.in_use_bytes, 3 * kMiB);
  EXPECT_EQ(stats.peak_in_use_bytes, 3 * kMiB);
  EXPECT_EQ(t.pool.allocation_size(held), 3 * kMiB);
  t.free(held);
}

TEST(CachingPool, ForeignPointersAreNotOwned) {
  PoolUnderTest t;
  const CUdeviceptr ptr = t.allocate(4096);
  EXPECT_TRUE(t.pool.owns(ptr));
  EXPECT_FALSE(t.pool.owns(ptr + 512));
  EXPECT_FALSE(t.pool.free(0xdead0000).owned);
  EXPECT_EQ(t.pool.allocation_size(ptr), 4096u);
  CUdeviceptr out = 0;
  EXPECT_EQ(t.pool.allocate(0, &out), CUDA_ERROR_INVALID_VALUE);
  t.free(ptr);
  EXPECT_FALSE(t.pool.free(ptr).owned);  // a second free is the driver's to reject
}

}  // namespace
}  // namespace vramshim::pool
