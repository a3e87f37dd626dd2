#include "shim/pool/caching_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
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

  // A stream the pool hears of, as the hooks tell it.
  CUstream create_stream(unsigned flags) {
    const CUstream created = stream(next_stream++);
    if (flags & CU_STREAM_NON_BLOCKING) fake.make_non_blocking(created);
    pool.on_stream_created(created, flags);
    return created;
  }
  // Another context of the device appears, with a stream the test queues work on; the pool is
  // told of the context, as the registry tells it.
  CUstream join_other_context() {
    const CUcontext other = reinterpret_cast<CUcontext>(0x77);
    const CUstream others_stream = stream(0x9a0);
    fake.make_other_context_stream(others_stream, other);
    pool.set_other_contexts({other});
    return others_stream;
  }
  void destroy_stream(CUstream destroyed) {
    pool.on_stream_destroyed(destroyed);
    fake.destroy_stream(destroyed);
  }
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
  uintptr_t next_stream = 0x100;
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
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
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

TEST(CachingPool, WithoutNonBlockingStreamsOneLegacyMarkerMakesAFreedBlockReusable) {
  PoolUnderTest t;
  const CUstream blocking = t.create_stream(CU_STREAM_DEFAULT);
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(blocking, a, 32 * kMiB);  // still running when the block is reused
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.record_event, 1u);
  EXPECT_EQ(counters.query_event + counters.synchronize_event + counters.synchronize_context, 0u);
  // The new owner's work on any blocking stream — one the pool never heard of, another thread's
  // per-thread default stream, the legacy stream — is ordered after the old owner's.
  t.fake.queue_work(stream(0x900), a, 8 * kMiB);
  t.fake.queue_work(CU_STREAM_PER_THREAD, a + 8 * kMiB, 8 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a + 16 * kMiB, 16 * kMiB);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
}

TEST(CachingPool, AFreedBlockServesARequestUpToAnEighthSmallerWholeAndChargesTheRequest) {
  constexpr size_t kKiB = 1024;
  PoolUnderTest t;
  // One 2 MiB segment, full: the 72 KiB block, once fenced, is the only free one.
  const CUdeviceptr freed = t.allocate(72 * kKiB);
  t.allocate(kMiB);
  t.allocate(2 * kMiB - kMiB - 72 * kKiB);
  t.free(freed);
  EXPECT_EQ(t.allocate(64 * kKiB), freed);
  // The 8 KiB past the request stay with it: the next small request is carved elsewhere.
  const CUdeviceptr next = t.allocate(8 * kKiB);
  EXPECT_FALSE(next >= freed && next < freed + 72 * kKiB);
  // In use: the requests, not the blocks.
  EXPECT_EQ(t.pool.stats().in_use_bytes, 64 * kKiB + kMiB + (kMiB - 72 * kKiB) + 8 * kKiB);
  t.free(freed);
  EXPECT_EQ(t.pool.stats().in_use_bytes, kMiB + (kMiB - 72 * kKiB) + 8 * kKiB);
}

TEST(CachingPool, OneMarkerCoversEveryBlockFreedBeforeIt) {
  PoolUnderTest t;
  std::vector<CUdeviceptr> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(t.allocate(32 * kMiB));
  for (CUdeviceptr ptr : blocks) t.free(ptr);
  for (int i = 0; i < 10; ++i) t.allocate(32 * kMiB);
  EXPECT_EQ(t.fake.counters().record_event, 1u);
  EXPECT_EQ(t.fake.counters().allocate, 10u);
}

TEST(CachingPool, ANewNonBlockingStreamSynchronizesOnce) {
  PoolUnderTest t;
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);  // ordered by the legacy stream for blocking streams only
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(t.fake.counters().synchronize_context, 1u);
  EXPECT_FALSE(t.fake.has_unfinished_write(a, 32 * kMiB));
  t.fake.queue_work(side, a, 32 * kMiB);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
}

// Once the last marker is done, the work of the blocks' earlier owners is: a new non-blocking
// stream waits for nothing (a synchronize would also wait for work queued since, which may itself
// wait for the host).
TEST(CachingPool, ANewNonBlockingStreamAfterTheLastMarkerIsDoneSynchronizesNothing) {
  PoolUnderTest t;
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);  // ordered by the legacy stream for blocking streams only
  t.fake.finish_work(CU_STREAM_LEGACY);
  const CUdeviceptr b = t.allocate(64 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, b, 64 * kMiB);  // queued after the marker, still running
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(t.fake.counters().synchronize_context, 0u);
  t.fake.queue_work(side, a, 32 * kMiB);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
  // Blocks freed from now on wait for the side stream's work too.
  t.free(a);
  EXPECT_NE(t.allocate(32 * kMiB), a);
}

// During a capture the synchronize is forbidden: the new stream waits for the last marker, which
// follows the free of every block handed out after a marker.
TEST(CachingPool, ANewNonBlockingStreamDuringACaptureWaitsForTheLastMarker) {
  PoolUnderTest t;
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);  // ordered by the legacy stream for blocking streams only
  t.capture.on_capture_begin(nullptr, nullptr);
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  t.fake.queue_work(side, a, 32 * kMiB);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.conflicts, 0u);
  EXPECT_EQ(counters.wait_event, 1u);
  EXPECT_EQ(counters.synchronize_context, 0u);
  EXPECT_EQ(counters.during_capture, 0u);
  t.capture.on_capture_end(nullptr, nullptr);
  t.pool.after_captures_end();
  EXPECT_EQ(t.fake.counters().synchronize_context, 0u);  // nothing owed
}

TEST(CachingPool, AStreamDestroyedWithQueuedWorkHoldsBackLaterFrees) {
  for (unsigned flags : {CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING}) {
    PoolUnderTest t;
    const CUstream doomed = t.create_stream(flags);
    const CUdeviceptr a = t.allocate(32 * kMiB);
    t.fake.queue_work(doomed, a, 32 * kMiB);
    t.destroy_stream(doomed);  // the write still runs
    t.free(a);
    const CUdeviceptr b = t.allocate(32 * kMiB);
    EXPECT_NE(b, a) << flags;
    t.fake.queue_work(CU_STREAM_PER_THREAD, b, 32 * kMiB);
    t.fake.finish_work(doomed);
    EXPECT_EQ(t.allocate(32 * kMiB), a) << flags;
    EXPECT_EQ(t.fake.counters().conflicts, 0u) << flags;
    EXPECT_EQ(t.fake.counters().synchronize_context, 0u) << flags;
    // Drained: back to legacy markers alone.
    const uint64_t queries = t.fake.counters().query_event;
    t.free(a);
    t.allocate(32 * kMiB);
    EXPECT_EQ(t.fake.counters().query_event, queries) << flags;
  }
}

TEST(CachingPool, AnUnfenceableStreamFencesWithAContextSynchronize) {
  PoolUnderTest t;
  t.pool.on_unfenceable_stream();
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(stream(0x900), a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.synchronize_context, 1u);
  EXPECT_EQ(counters.record_event, 0u);
  EXPECT_EQ(counters.allocate, 1u);
}

// Streams of another context of the device reach the pool's memory, and neither a marker on the
// pool's legacy stream nor its context's synchronize waits for them.
TEST(CachingPool, AnotherContextOfTheDeviceFencesWithASynchronizeOfEveryContext) {
  PoolUnderTest t;
  const CUstream others_stream = t.join_other_context();
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(others_stream, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  EXPECT_FALSE(t.fake.has_unfinished_write(a, 32 * kMiB));
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.synchronize_other_context, 1u);
  EXPECT_EQ(counters.allocate, 1u);
}

// Blocks handed out after a legacy marker may be used by the new context while the work before
// their free still runs: one synchronize when the first other context appears.
TEST(CachingPool, ASecondContextOfTheDeviceSynchronizesOnce) {
  PoolUnderTest t;
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, a, 32 * kMiB);
  t.free(a);
  EXPECT_EQ(t.allocate(32 * kMiB), a);
  const CUcontext other = reinterpret_cast<CUcontext>(0x77);
  t.pool.set_other_contexts({other});
  EXPECT_EQ(t.fake.counters().synchronize_context, 1u);
  EXPECT_FALSE(t.fake.has_unfinished_write(a, 32 * kMiB));
}

// The context leaving (told before the driver destroys it) may still run work on blocks freed
// since: they are covered by its synchronize; afterwards a legacy marker suffices again.
TEST(CachingPool, AContextLeavingIsSynchronizedOnceThenMarkersSufficeAgain) {
  PoolUnderTest t;
  const CUstream others_stream = t.join_other_context();
  const CUdeviceptr a = t.allocate(32 * kMiB);
  t.fake.queue_work(others_stream, a, 32 * kMiB);
  t.free(a);
  t.pool.set_other_contexts({});
  EXPECT_EQ(t.fake.counters().synchronize_other_context, 1u);
  EXPECT_FALSE(t.fake.has_unfinished_write(a, 32 * kMiB));
  const CUdeviceptr b = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, b, 32 * kMiB);
  t.free(b);
  EXPECT_EQ(t.allocate(32 * kMiB), b);
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_EQ(counters.synchronize_other_context, 1u);
  EXPECT_EQ(counters.synchronize_context, 1u);  // the leaving's, none since
  EXPECT_GE(counters.record_event, 1u);
}

// Blocks made reusable by a marker alone stay so while the pool passes through another mode (a
// blocking stream destroyed with queued work): a later stream the legacy stream does not order, or
// another context, still gets the synchronize.
TEST(CachingPool, BlocksFreedByAMarkerGetTheSynchronizeAfterADetourThroughDraining) {
  for (const bool other_context : {false, true}) {
    PoolUnderTest t;
    const CUdeviceptr x = t.allocate(32 * kMiB);
    t.fake.queue_work(CU_STREAM_LEGACY, x, 32 * kMiB);
    t.free(x);
    t.allocate(64 * kMiB);  // records the marker that makes x reusable
    const CUstream temporary = t.create_stream(CU_STREAM_DEFAULT);
    t.fake.queue_work(temporary);
    t.destroy_stream(temporary);  // its work still runs: the pool is draining
    const CUstream user =
        other_context ? t.join_other_context() : t.create_stream(CU_STREAM_NON_BLOCKING);
    EXPECT_GE(t.fake.counters().synchronize_context, 1u) << other_context;
    const CUdeviceptr again = t.allocate(32 * kMiB);
    t.fake.queue_work(user, again, 32 * kMiB);
    EXPECT_EQ(t.fake.counters().conflicts, 0u) << other_context;
  }
}

// A context leaving while a capture runs cannot be synchronized: what was freed while it lived
// waits for a synchronize after the capture, never for a marker alone.
TEST(CachingPool, AContextLeavingDuringACaptureHoldsItsBlocksForASynchronize) {
  PoolUnderTest t;
  const CUstream others_stream = t.join_other_context();
  const CUdeviceptr x = t.allocate(32 * kMiB);
  t.capture.on_capture_begin(nullptr, nullptr);
  t.fake.queue_work(others_stream, x, 32 * kMiB);
  t.free(x);
  t.pool.set_other_contexts({});
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  t.capture.on_capture_end(nullptr, nullptr);
  const CUdeviceptr again = t.allocate(32 * kMiB);
  t.fake.queue_work(CU_STREAM_LEGACY, again, 32 * kMiB);
  EXPECT_EQ(t.fake.counters().conflicts, 0u);
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
}

TEST(CachingPool, PastThePendingBoundWaitsOnTheOldestFenceOnly) {
  PoolOptions options;
  options.max_pending_bytes = 64 * kMiB;
  PoolUnderTest t(options);
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
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

TEST(CachingPool, NoWorkOfANewOwnerRacesWithAnEarlierOwnersWrite) {
  // Random sizes, streams and completions; after every allocation the new owner writes its block
  // on a random stream, and that write must be ordered after every unfinished write of an earlier
  // owner. The streams include blocking ones the pool never heard of (other threads' per-thread
  // default streams, streams made through unhooked entry points) and streams destroyed while
  // their work still runs. Fails when a reuse rule is removed.
  enum Variant { kBlockingOnly, kNonBlocking, kDestroyed, kUnfenceable, kOtherContext, kVariants };
  for (int variant = 0; variant < kVariants; ++variant) {
    PoolUnderTest t;
    std::vector<CUstream> streams = {CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, stream(0x901),
                                     stream(0x902), t.create_stream(CU_STREAM_DEFAULT)};
    if (variant != kBlockingOnly) {
      for (int i = 0; i < 2; ++i) streams.push_back(t.create_stream(CU_STREAM_NON_BLOCKING));
    }
    if (variant == kUnfenceable) t.pool.on_unfenceable_stream();
    if (variant == kOtherContext) {
      const CUcontext other = reinterpret_cast<CUcontext>(0x77);
      for (const uintptr_t id : {0x9a0, 0x9a1}) {
        t.fake.make_other_context_stream(stream(id), other);
        streams.push_back(stream(id));
      }
      t.pool.set_other_contexts({other});
    }
    std::mt19937 rng(variant);
    std::vector<std::pair<CUdeviceptr, size_t>> live;
    for (int i = 0; i < 3000; ++i) {
      const size_t bytes = std::uniform_int_distribution<size_t>(1, 8 * kMiB)(rng);
      const CUdeviceptr ptr = t.allocate(bytes);
      t.fake.queue_work(streams[rng() % streams.size()], ptr, bytes);
      ASSERT_EQ(t.fake.counters().conflicts, 0u) << "variant " << variant << ", step " << i;
      live.emplace_back(ptr, bytes);
      if (live.size() > 8 || rng() % 2 == 0) {
        const size_t index = rng() % live.size();
        t.free(live[index].first);
        live.erase(live.begin() + index);
      }
      if (rng() % 5 == 0) t.fake.finish_work(streams[rng() % streams.size()]);
      if (variant == kDestroyed && rng() % 50 == 0) {
        const size_t index = 4 + rng() % (streams.size() - 4);  // a created stream
        t.destroy_stream(streams[index]);
        streams[index] = t.create_stream(rng() % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
      }
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
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
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

// During a capture the pool may neither synchronize nor free, but asking the driver for the request
// alone needs neither: a capture in relaxed mode may allocate, and must get what the driver has.
TEST(CachingPool, ASegmentTooLargeForTheDeviceFallsBackToTheExactSizeDuringACapture) {
  PoolUnderTest t(PoolOptions{}, kMiB + kMiB / 2);
  t.capture.on_capture_begin(nullptr, nullptr);
  EXPECT_NE(t.allocate(kMiB), 0u);
  t.capture.on_capture_end(nullptr, nullptr);
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
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
  // Freed blocks wait for a fence; the control thread's periodic call issues it and hands back
  // what passes the cap.
  EXPECT_EQ(t.pool.enforce_max_cached(), 90 * kMiB);
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

// The driver's event record waits at a gate until the test opens it.
class GatedRecordDeviceApi : public FakeDeviceApi {
 public:
  using FakeDeviceApi::FakeDeviceApi;
  CUresult record_event(CUevent event, CUstream stream) override {
    entered_.store(true);
    while (!open_.load()) std::this_thread::yield();
    return FakeDeviceApi::record_event(event, stream);
  }
  bool entered() const { return entered_.load(); }
  void open() { open_.store(true); }

 private:
  std::atomic<bool> entered_{false};
  std::atomic<bool> open_{false};
};

// A thread holding the fence claim across a driver call makes other fence work wait; releasing the
// claim wakes it (the release notifies only when someone waits).
TEST(CachingPool, FenceWorkWaitingForTheClaimIsWokenWhenTheClaimIsReleased) {
  CaptureState capture;
  GatedRecordDeviceApi fake(80 * kGiB, &capture);
  DeviceLimit limit;
  CachingPool pool(fake, PoolOptions{}, limit, capture);
  // A large block freed and asked for again waits for a legacy-stream marker: the allocating thread
  // takes the claim and records it, and stays in the driver until the gate opens.
  const CUstream destroyed = stream(0x200);
  pool.on_stream_created(destroyed, 0);
  CUdeviceptr ptr = 0;
  ASSERT_EQ(pool.allocate(32 * kMiB, &ptr), CUDA_SUCCESS);
  ASSERT_TRUE(pool.free(ptr).owned);
  std::thread allocating([&] {
    CUdeviceptr again = 0;
    EXPECT_EQ(pool.allocate(32 * kMiB, &again), CUDA_SUCCESS);
  });
  while (!fake.entered()) std::this_thread::yield();
  // Destroying a stream is fence work: it waits for the claim.
  std::atomic<bool> done{false};
  std::thread destroying([&] {
    pool.on_stream_destroyed(destroyed);
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it reach the wait
  EXPECT_FALSE(done.load());
  fake.open();
  allocating.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!done.load()) {
    ADD_FAILURE() << "the thread waiting for the fence claim was never woken";
    std::_Exit(1);  // it cannot be joined
  }
  destroying.join();
}

// Streams made and destroyed with their work still queued (a job that makes a stream per step):
// the events the pool recorded to wait for that work come back to it as spares once it is done, and
// those past a few dozen go back to the driver.
TEST(CachingPool, SpareEventsPastAFewDozenGoBackToTheDriver) {
  PoolUnderTest t;
  t.free(t.allocate(kMiB));  // the pool has a segment: destroyed streams are waited for
  for (int i = 0; i < 500; ++i) {
    const CUstream made = t.create_stream(CU_STREAM_DEFAULT);
    t.fake.queue_work(made);
    t.destroy_stream(made);
  }
  t.fake.finish_all_work();
  for (int i = 0; i < 3; ++i) t.free(t.allocate(32 * kMiB));  // markers: draining events polled
  const FakeDeviceApi::Counters counters = t.fake.counters();
  EXPECT_GE(counters.create_event, 500u);
  EXPECT_LE(counters.create_event - counters.destroy_event, 70u);
}

// A fence with many non-blocking streams records an event on each: the spares they come back as
// are kept for the next fence, not given back and made again every time.
TEST(CachingPool, AFenceOverManyStreamsReusesItsEvents) {
  PoolUnderTest t;
  for (int i = 0; i < 100; ++i) t.create_stream(CU_STREAM_NON_BLOCKING);
  for (int i = 0; i < 3; ++i) t.free(t.allocate(32 * kMiB));
  const uint64_t created = t.fake.counters().create_event;
  EXPECT_GE(created, 100u);
  for (int i = 0; i < 5; ++i) t.free(t.allocate(32 * kMiB));
  EXPECT_EQ(t.fake.counters().create_event, created);
  EXPECT_EQ(t.fake.counters().destroy_event, 0u);
}

// A non-blocking stream made by another thread while a legacy-stream marker is being recorded
// (the device lock is down for the driver call): the marker makes the freed block reusable, and
// the new stream, not ordered after the marker, must not run the new owner's work while the old
// owner's still runs. The stream's arrival waits for the marker's, and so sees the block reused by
// it, and synchronizes.
TEST(CachingPool, ANonBlockingStreamMadeWhileAMarkerIsRecordedSeesTheBlocksItFreed) {
  CaptureState capture;
  GatedRecordDeviceApi fake(80 * kGiB, &capture);
  DeviceLimit limit;
  CachingPool pool(fake, PoolOptions{}, limit, capture);
  const CUstream blocking = stream(0x200);
  pool.on_stream_created(blocking, CU_STREAM_DEFAULT);
  CUdeviceptr a = 0;
  ASSERT_EQ(pool.allocate(32 * kMiB, &a), CUDA_SUCCESS);
  fake.queue_work(blocking, a, 32 * kMiB);  // still running when the block is reused
  ASSERT_TRUE(pool.free(a).owned);
  CUdeviceptr again = 0;
  std::thread allocating([&] { EXPECT_EQ(pool.allocate(32 * kMiB, &again), CUDA_SUCCESS); });
  while (!fake.entered()) std::this_thread::yield();
  const CUstream side = stream(0x300);
  std::atomic<bool> created{false};
  std::thread creating([&] {
    fake.make_non_blocking(side);
    pool.on_stream_created(side, CU_STREAM_NON_BLOCKING);
    created.store(true);
  });
  // Without the wait for the marker, the stream's arrival is over in microseconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (!created.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  fake.open();
  allocating.join();
  creating.join();
  EXPECT_EQ(again, a);
  fake.queue_work(side, again, 32 * kMiB);
  EXPECT_EQ(fake.counters().conflicts, 0u);
}

// The fake's segment frees, and its allocations of at least a size, held at a gate while it is
// closed: a free that waits for the device's work, an allocation the driver takes long to answer.
class GatedDevice : public testing::ForwardingDeviceApi {
 public:
  GatedDevice(FakeDeviceApi& fake, const CaptureState& capture)
      : ForwardingDeviceApi(fake), capture_(&capture) {}
  void close() { open_ = false; }
  void open() {
    std::lock_guard<std::mutex> guard(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void wait_for_a_held_call() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return held_ > 0; });
  }
  void hold_allocations_from(size_t bytes) { held_allocation_bytes_ = bytes; }
  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override {
    if (bytes >= held_allocation_bytes_) hold();
    return fake().allocate(bytes, ptr);
  }
  // The pool's own frees of its segments wait at the gate, once let through (as a driver's free
  // waits for the device's work after its checks).
  CUresult free_segment(CUdeviceptr ptr) override {
    if (capture_ != nullptr && capture_->active()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    hold();
    return fake().free(ptr);
  }

 private:
  void hold() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++held_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_.load(); });
    --held_;
  }

  const CaptureState* capture_;
  size_t held_allocation_bytes_ = SIZE_MAX;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> open_{true};
  int held_ = 0;
};

// One pool on a fake context whose driver calls may be held at a gate (GatedDevice).
struct GatedPoolUnderTest {
  explicit GatedPoolUnderTest(PoolOptions options = {}, uint64_t capacity = 80 * kGiB)
      : fake(capacity, &capture), gated(fake, capture), pool(gated, options, limit, capture) {}

  CaptureState capture;
  FakeDeviceApi fake;
  GatedDevice gated;
  DeviceLimit limit;
  CachingPool pool;
};

// A flush hands its segments back to the driver, each free waiting for the device's work, without
// the fence claim: the program's threads reuse what they free meanwhile (they waited for the
// flush's last free: seconds behind long kernels).
TEST(CachingPool, AFlushsFreesToTheDriverHoldNoReuseUp) {
  GatedPoolUnderTest t;
  CUdeviceptr flushed = 0, reused = 0;
  ASSERT_EQ(t.pool.allocate(32 * kMiB, &flushed), CUDA_SUCCESS);
  ASSERT_EQ(t.pool.allocate(32 * kMiB, &reused), CUDA_SUCCESS);
  EXPECT_TRUE(t.pool.free(flushed).owned);
  t.gated.close();
  std::thread flusher([&] { t.pool.flush(); });
  t.gated.wait_for_a_held_call();  // the flush is handing the first block's segment back
  // Freed and allocated again at its size: reusable once a fence (a legacy-stream marker) says the
  // free's work is done, which takes the claim.
  std::future<CUdeviceptr> again = std::async(std::launch::async, [&] {
    EXPECT_TRUE(t.pool.free(reused).owned);
    CUdeviceptr ptr = 0;
    EXPECT_EQ(t.pool.allocate(32 * kMiB, &ptr), CUDA_SUCCESS);
    return ptr;
  });
  const bool served_during_the_free =
      again.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  t.gated.open();
  flusher.join();
  EXPECT_TRUE(served_during_the_free) << "the allocation waited for the flush's free";
  EXPECT_EQ(again.get(), reused);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
}

// A context's teardown waits for a flush's frees to the driver, made without the claim: the
// driver destroys the context after the pool's drop.
TEST(CachingPool, ADropWaitsForAFlushsFreesToTheDriver) {
  GatedPoolUnderTest t;
  CUdeviceptr block = 0;
  ASSERT_EQ(t.pool.allocate(32 * kMiB, &block), CUDA_SUCCESS);
  EXPECT_TRUE(t.pool.free(block).owned);
  t.gated.close();
  std::thread flusher([&] { t.pool.flush(); });
  t.gated.wait_for_a_held_call();
  std::future<void> dropped = std::async(std::launch::async, [&] { t.pool.drop(); });
  const bool dropped_during_the_free =
      dropped.wait_for(std::chrono::milliseconds(300)) == std::future_status::ready;
  t.gated.open();
  flusher.join();
  dropped.get();
  EXPECT_FALSE(dropped_during_the_free);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
  EXPECT_EQ(t.fake.live_bytes(), 0u);
}

// A capture that begins while a flush hands segments back to the driver: the frees not made yet
// would invalidate it, so the pool keeps those segments (they were lost: the driver refused the
// free, and the pool had forgotten them), and frees them once the capture ended.
TEST(CachingPool, AFlushsFreesStopForACaptureBegunMeanwhile) {
  GatedPoolUnderTest t;
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(t.pool.allocate(32 * kMiB, &first), CUDA_SUCCESS);
  ASSERT_EQ(t.pool.allocate(64 * kMiB, &second), CUDA_SUCCESS);
  EXPECT_TRUE(t.pool.free(first).owned);
  EXPECT_TRUE(t.pool.free(second).owned);
  t.gated.close();
  FlushResult during;
  std::thread flusher([&] { during = t.pool.flush(); });
  t.gated.wait_for_a_held_call();  // the largest segment's free has been made, and is held
  t.capture.on_capture_begin(nullptr, nullptr);
  t.gated.open();
  flusher.join();
  EXPECT_EQ(during.segment_bytes, 64 * kMiB);
  EXPECT_EQ(t.fake.live_bytes(), 32 * kMiB);
  EXPECT_EQ(t.pool.stats().reserved_bytes, 32 * kMiB) << "the segment not freed is the pool's";
  EXPECT_EQ(t.fake.counters().during_capture, 1u) << "only the free made before the capture";
  t.capture.on_capture_end(nullptr, nullptr);
  EXPECT_EQ(t.pool.flush().segment_bytes, 32 * kMiB);
  EXPECT_EQ(t.fake.live_bytes(), 0u);
  EXPECT_EQ(t.fake.counters().bad_free, 0u);
}

// With the pool off an allocation is charged before the driver answers (the cap holds among
// threads): another thread's new peak meanwhile must not count it, which the driver may refuse
// (an 8 GiB request refused made the device's peak 8 GiB + 1 MiB).
TEST(CachingPool, APeakCountsNoAllocationTheDriverHasNotAnswered) {
  PoolOptions options;
  options.enabled = false;
  GatedPoolUnderTest t(options, 4 * kGiB);
  t.gated.hold_allocations_from(kGiB);
  t.gated.close();
  std::future<CUresult> refused = std::async(std::launch::async, [&] {
    CUdeviceptr ptr = 0;
    return t.pool.allocate(8 * kGiB, &ptr);
  });
  t.gated.wait_for_a_held_call();
  CUdeviceptr small = 0;
  ASSERT_EQ(t.pool.allocate(kMiB, &small), CUDA_SUCCESS);
  t.gated.open();
  EXPECT_EQ(refused.get(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(t.limit.peak_in_use(), kMiB);
  EXPECT_EQ(t.limit.in_use(), kMiB);
  EXPECT_TRUE(t.pool.free(small).owned);
}

TEST(CachingPool, FlushWhileFourThreadsAllocate) {
  PoolUnderTest t;
  t.create_stream(CU_STREAM_NON_BLOCKING);
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

// A flush during a capture hands back nothing and calls nothing (the runtime makes it again once
// the capture ended).
TEST(CachingPool, CaptureIsLeftAloneAndAFlushDuringItReleasesNothing) {
  PoolUnderTest t;
  const CUstream side = t.create_stream(CU_STREAM_NON_BLOCKING);
  const CUdeviceptr before = t.allocate(8 * kMiB);
  t.fake.queue_work(side, before, 8 * kMiB);
  t.capture.on_capture_begin(nullptr, nullptr);
  t.free(before);
  std::vector<CUdeviceptr> during;
  for (int i = 0; i < 20; ++i) during.push_back(t.allocate(8 * kMiB));
  for (CUdeviceptr ptr : during) t.free(ptr);
  EXPECT_EQ(std::count(during.begin(), during.end(), before), 0);

  EXPECT_EQ(t.pool.flush().total(), 0u);
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  t.capture.on_capture_end(nullptr, nullptr);
  EXPECT_GT(t.pool.flush().total(), 0u);
  EXPECT_EQ(t.fake.counters().during_capture, 0u);
  EXPECT_EQ(t.pool.stats().reserved_bytes, 0u);
  EXPECT_EQ(t.fake.live_bytes(), 0u);
}

TEST(CachingPool, DropFreesCachedSegmentsAndForgetsLiveOnes) {
  PoolUnderTest t;
  t.create_stream(CU_STREAM_NON_BLOCKING);
  const CUdeviceptr live = t.allocate(32 * kMiB);
  const CUdeviceptr cached = t.allocate(32 * kMiB);
  t.free(cached);
  t.free(t.allocate(32 * kMiB));  // issues a fence, so the pool holds events
  t.pool.drop();
  EXPECT_EQ(t.fake.live_bytes(), 32 * kMiB);  // the live block's segment, left to the driver
  EXPECT_EQ(t.fake.live_event_count(), 0u);
  EXPECT_FALSE(t.pool.holds(live));
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

// A context destroyed without the pool hearing of it (the driver freed its memory, whose
// addresses may be another allocation's by now): the pool hands nothing to the driver, whatever
// asks it to release (a flush, a trim, an out-of-memory elsewhere).
TEST(CachingPool, APoolWhoseContextIsGoneFreesNothing) {
  PoolUnderTest t;
  t.free(t.allocate(32 * kMiB));
  t.free(t.allocate(kMiB));
  t.fake.destroy_context();
  t.fake.set_push_fails(true);
  const uint64_t frees_before = t.fake.counters().free;
  t.pool.release_for_out_of_memory();
  t.pool.trim(0);
  t.pool.flush();
  t.pool.drop();
  EXPECT_EQ(t.fake.counters().free, frees_before);
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
  EXPECT_TRUE(t.pool.holds(held));
  // Each live allocation is a segment of one allocated block in the pool's picture (the report's
  // segments, the torch-snapshot export): they add up to the reserved bytes.
  const CUdeviceptr second = t.allocate(1000);
  const PoolPicture picture = t.pool.picture();
  ASSERT_EQ(picture.segments.size(), 2u);
  uint64_t segment_bytes = 0;
  for (const SegmentPicture& segment : picture.segments) {
    ASSERT_EQ(segment.blocks.size(), 1u);
    EXPECT_EQ(segment.blocks[0].state, BlockState::kAllocated);
    EXPECT_EQ(segment.blocks[0].size, segment.size);
    segment_bytes += segment.size;
  }
  EXPECT_LT(picture.segments[0].base, picture.segments[1].base);
  EXPECT_EQ(segment_bytes, t.pool.stats().reserved_bytes);
  t.free(second);
  t.free(held);
}

TEST(CachingPool, ForeignPointersAreTheDriversToFree) {
  PoolUnderTest t;
  const CUdeviceptr ptr = t.allocate(4096);
  EXPECT_TRUE(t.pool.holds(ptr));
  EXPECT_FALSE(t.pool.holds(0xdead0000));
  EXPECT_FALSE(t.pool.free(0xdead0000).owned);
  CUdeviceptr out = 0;
  EXPECT_EQ(t.pool.allocate(0, &out), CUDA_ERROR_INVALID_VALUE);
  t.free(ptr);
}

TEST(CachingPool, ADoubleOrInteriorFreeGetsTheDriversErrorAndNeverReachesIt) {
  // Blocks that start a segment, lie inside one, are free, pending or still allocated.
  for (unsigned flags : {CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING}) {
    PoolUnderTest t;
    const CUstream side = t.create_stream(flags);
    const CUdeviceptr head = t.allocate(4096);  // starts a segment
    const CUdeviceptr inner = t.allocate(4096);
    const CUdeviceptr live = t.allocate(4096);
    const CUdeviceptr large = t.allocate(64 * kMiB);
    t.fake.queue_work(side, large, kMiB);
    for (CUdeviceptr ptr : {head, inner, large}) t.free(ptr);
    const std::vector<CUdeviceptr> bad = {head,        inner,      large,
                                          large + 512, live + 512, head + 16384};
    for (CUdeviceptr ptr : bad) {
      const FreeResult result = t.pool.free(ptr);
      EXPECT_TRUE(result.owned) << std::hex << ptr;
      EXPECT_EQ(result.status, CUDA_ERROR_INVALID_VALUE) << std::hex << ptr;
    }
    EXPECT_EQ(t.fake.counters().free, 0u);
    // The pool is intact: the live block is still live, the others are served again.
    EXPECT_TRUE(t.pool.holds(live));
    t.fake.finish_all_work();
    t.free(live);
    EXPECT_EQ(t.pool.stats().in_use_bytes, 0u);
    t.pool.flush();
    EXPECT_EQ(t.fake.counters().bad_free, 0u);
    EXPECT_EQ(t.fake.live_bytes(), 0u);
  }
}

}  // namespace
}  // namespace vramshim::pool
