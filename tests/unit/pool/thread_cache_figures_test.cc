// Thread caches change figures without the device lock only by spending credit (what the thread's
// own frees took out of them), so the figures the lock keeps are never below the true ones, and
// every new peak is made under the lock with the credits folded back. What this holds: the pool's
// and the tracker's figures (in use, peaks, every site's figures and its bytes at the peak) are
// exact, and the device's limit is never passed, while threads allocate through their caches.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "shim/attribution/tracker.h"
#include "shim/pool/size_policy.h"
#include "tests/support/thread_barrier.h"
#include "tests/unit/pool/cached_pool.h"
#include "tests/unit/pool/pool_attribution.h"

namespace vramshim::pool {
namespace {

using attribution::AllocationKind;
using testing::CachedPool;

using Attribution = testing::PoolAttribution;

// A cached pool attributed by `attribution`, on device 0.
struct AttributedPool {
  explicit AttributedPool(PoolOptions options = {}) : pool(options, &attribution.tagger) {}
  CUdeviceptr allocate(size_t bytes, AllocationKind kind = AllocationKind::kDevice) {
    CUdeviceptr ptr = 0;
    const uint64_t request = attribution.tracker.prepare(SizePolicy::round(bytes), kind);
    EXPECT_EQ(pool.allocate(bytes, &ptr, request), CUDA_SUCCESS);
    return ptr;
  }
  void free(CUdeviceptr ptr) { EXPECT_TRUE(pool.free(ptr).owned); }
  const attribution::SiteFigures& site(const attribution::TrackerSnapshot& snapshot,
                                       AllocationKind kind) {
    for (const attribution::SiteFigures& figures : snapshot.sites) {
      if (figures.kind == kind) return figures;
    }
    ADD_FAILURE() << "no site of kind " << static_cast<int>(kind);
    return snapshot.sites.front();
  }

  Attribution attribution;
  CachedPool pool;
};

// What the figures must be, kept alongside: per site, and the device's peak.
struct Model {
  struct Site {
    uint64_t live = 0, total = 0, count = 0, peak = 0, at_peak = 0;
  };
  void allocate(AllocationKind kind, uint64_t bytes) {
    Site& figures = sites[kind];
    figures.live += bytes;
    figures.total += bytes;
    ++figures.count;
    figures.peak = std::max(figures.peak, figures.live);
    in_use += bytes;
    if (in_use > peak) {
      peak = in_use;
      for (auto& [each, each_figures] : sites) each_figures.at_peak = each_figures.live;
    }
  }
  void free(AllocationKind kind, uint64_t bytes) {
    sites[kind].live -= bytes;
    in_use -= bytes;
  }
  std::map<AllocationKind, Site> sites;
  uint64_t in_use = 0, peak = 0;
};

void expect_figures(AttributedPool& t, Model& model, const std::string& when) {
  const PoolStats stats = t.pool.pool.stats();
  EXPECT_EQ(stats.in_use_bytes, model.in_use) << when;
  EXPECT_EQ(stats.peak_in_use_bytes, model.peak) << when;
  const attribution::TrackerSnapshot snapshot = t.attribution.tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, model.in_use) << when;
  EXPECT_EQ(snapshot.peak_in_use_bytes, model.peak) << when;
  for (const auto& [kind, expected] : model.sites) {
    const attribution::SiteFigures& site = t.site(snapshot, kind);
    EXPECT_EQ(site.live_bytes, expected.live) << when;
    EXPECT_EQ(site.total_bytes, expected.total) << when;
    EXPECT_EQ(site.total_count, expected.count) << when;
    EXPECT_EQ(site.peak_bytes, expected.peak) << when;
    EXPECT_EQ(site.bytes_at_peak, expected.at_peak) << when;
  }
}

TEST(ThreadCacheFigures, EveryFigureIsExactWhateverTheCachesServed) {
  // Two sites (two kinds), sizes the cache serves, live sets that rise and fall; the figures are
  // read now and then (a read folds the credits back, changing what goes without the lock next)
  // and after long runs of unread operations.
  AttributedPool t;
  Model model;
  std::mt19937 rng(7);
  const size_t sizes[] = {512, 4096, 12288, 65536};
  struct Live {
    CUdeviceptr ptr;
    AllocationKind kind;
    uint64_t bytes;
  };
  std::vector<Live> live;
  for (int i = 1; i <= 20000; ++i) {
    // The live set drifts between about 0 and 200 blocks.
    const size_t target = 100 + 100 * std::sin(i / 1500.0);
    if (live.size() < target || (rng() % 2 == 0 && live.size() < target + 20)) {
      const AllocationKind kind =
          rng() % 3 == 0 ? AllocationKind::kPitched : AllocationKind::kDevice;
      const uint64_t bytes = sizes[rng() % 4];
      live.push_back({t.allocate(bytes, kind), kind, bytes});
      model.allocate(kind, SizePolicy::round(bytes));
    } else if (!live.empty()) {
      const size_t index = rng() % live.size();
      t.free(live[index].ptr);
      model.free(live[index].kind, SizePolicy::round(live[index].bytes));
      live.erase(live.begin() + index);
    }
    if (i % 997 == 0 || i == 20000) expect_figures(t, model, "operation " + std::to_string(i));
  }
  const PoolStats stats = t.pool.pool.stats();
  EXPECT_EQ(stats.pool_hits + stats.pool_misses, model.sites[AllocationKind::kDevice].count +
                                                     model.sites[AllocationKind::kPitched].count);
}

TEST(ThreadCacheFigures, APeakThreadsReachTogetherIsTheTruePeak) {
  // Four threads take blocks, wait until all hold theirs (the device's true peak is then exactly
  // their sum), free them, and do it again with more; in between each reuses its blocks through
  // its cache. The peak, and the site's bytes at it, must be that sum: a peak made by an
  // allocation that spent credit, or one missed because credit was outstanding, would not be.
  AttributedPool t;
  constexpr int kThreads = 4;
  constexpr uint64_t kBytes = 4096;
  vramshim::testing::ThreadBarrier all_hold(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&] {
      for (int round = 1; round <= 3; ++round) {
        for (int i = 0; i < 300; ++i) t.free(t.allocate(kBytes));
        std::vector<CUdeviceptr> held;
        for (int i = 0; i < 8 * round; ++i) held.push_back(t.allocate(kBytes));
        all_hold.arrive_and_wait();
        all_hold.arrive_and_wait();
        for (CUdeviceptr ptr : held) t.free(ptr);
      }
      t.pool.close_mine();
    });
  }
  for (std::thread& thread : threads) thread.join();
  const uint64_t peak = kThreads * 8 * 3 * kBytes;
  EXPECT_EQ(t.pool.pool.stats().peak_in_use_bytes, peak);
  const attribution::TrackerSnapshot snapshot = t.attribution.tracker.snapshot();
  EXPECT_EQ(snapshot.peak_in_use_bytes, peak);
  const attribution::SiteFigures& site = t.site(snapshot, AllocationKind::kDevice);
  EXPECT_EQ(site.peak_bytes, peak);
  EXPECT_EQ(site.bytes_at_peak, peak);
  EXPECT_EQ(site.live_bytes, 0u);
  EXPECT_EQ(site.total_count, uint64_t{kThreads} * (3 * 300 + 8 * (1 + 2 + 3)));
  EXPECT_EQ(snapshot.in_use_bytes, 0u);
}

TEST(ThreadCacheFigures, TheLimitHoldsWhileThreadsSpendCredit) {
  // 6 of the 32 blocks 4 threads may hold: one thread alone reaches it, so the test reaches the
  // limit however the threads overlap (on 2 busy cores they may barely overlap).
  constexpr uint64_t kLimit = uint64_t{384} << 10;
  constexpr uint64_t kBytes = uint64_t{64} << 10;
  PoolOptions options;
  options.limit_bytes = kLimit;
  AttributedPool t(options);
  std::atomic<uint64_t> held{0};  // never above what the device truly holds
  std::atomic<uint64_t> highest{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(id);
      std::vector<CUdeviceptr> live;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 50000; ++i) {
        CUdeviceptr ptr = 0;
        const uint64_t request =
            t.attribution.tracker.prepare(kBytes, attribution::AllocationKind::kDevice);
        const CUresult result = t.pool.allocate(kBytes, &ptr, request);
        if (result == CUDA_SUCCESS) {
          const uint64_t now = held.fetch_add(kBytes) + kBytes;
          uint64_t seen = highest.load();
          while (now > seen && !highest.compare_exchange_weak(seen, now)) {
          }
          live.push_back(ptr);
        } else {
          ASSERT_EQ(result, CUDA_ERROR_OUT_OF_MEMORY);
          refused.fetch_add(1);
        }
        if (live.size() == 8 || (!live.empty() && rng() % 8 == 0)) {
          held.fetch_sub(kBytes);
          t.free(live.back());
          live.pop_back();
        }
      }
      for (CUdeviceptr ptr : live) {
        held.fetch_sub(kBytes);
        t.free(ptr);
      }
      t.pool.close_mine();
    });
  }
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(highest.load(), kLimit);
  EXPECT_GT(refused.load(), 0u) << "the threads never reached the limit: the test shows nothing";
  // Credit outstanding never makes an allocation fail that fits.
  const CUdeviceptr whole = t.allocate(kLimit);
  EXPECT_NE(whole, 0u);
  t.free(whole);
}

TEST(ThreadCacheFigures, CreditOutstandingNeverRefusesAnAllocationThatFits) {
  constexpr uint64_t kBytes = uint64_t{64} << 10;
  PoolOptions options;
  options.limit_bytes = 2 * kBytes;
  AttributedPool t(options);
  for (int i = 0; i < 300; ++i) t.free(t.allocate(kBytes));  // credit outstanding
  const CUdeviceptr whole = t.allocate(2 * kBytes);
  EXPECT_NE(whole, 0u);
  t.free(whole);
}

// Holds the first allocate after arm() until open(), so other threads act while a pool grows.
class GatedAllocateDeviceApi : public testing::FakeDeviceApi {
 public:
  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override {
    if (armed_.exchange(false)) {
      std::unique_lock<std::mutex> lock(mutex_);
      entered_ = true;
      changed_.notify_all();
      changed_.wait(lock, [this] { return opened_; });
    }
    return FakeDeviceApi::allocate(bytes, ptr);
  }
  void arm() { armed_.store(true); }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return entered_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    opened_ = true;
    changed_.notify_all();
  }

 private:
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false, opened_ = false;
};

TEST(ThreadCacheFigures, CreditOutstandingNeverRefusesACharge) {
  // A grows its pool (the lock dropped around the driver's call) for a request the limit allows;
  // meanwhile B allocates by the lock and frees through its cache, so the charged bytes include
  // B's credit when A's grow returns. A's charge must succeed: only the true bytes in use count.
  constexpr size_t kMiB = size_t{1} << 20;
  CaptureState capture;
  GatedAllocateDeviceApi fake;
  DeviceLimit limit(3 * kMiB);
  DeviceCaches caches;
  PoolOptions options;
  options.limit_bytes = 3 * kMiB;
  CachingPool pool(fake, options, limit, capture, nullptr, 0, &caches);
  std::atomic<int> stage{0};
  std::thread b([&] {
    ThreadCache* cache = pool.open_thread_cache();
    CUdeviceptr first = 0, second = 0;
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(pool.allocate(kMiB, &first, 0, nullptr, cache), CUDA_SUCCESS);
      ASSERT_EQ(pool.allocate(kMiB, &second, 0, nullptr, cache), CUDA_SUCCESS);
      ASSERT_TRUE(pool.free(first, cache).owned);
      ASSERT_TRUE(pool.free(second, cache).owned);
    }
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
    ASSERT_EQ(pool.allocate(kMiB, &first, 0, nullptr, cache), CUDA_SUCCESS);
    ASSERT_EQ(pool.allocate(kMiB, &second, 0, nullptr, cache), CUDA_SUCCESS);
    ASSERT_TRUE(pool.free(first, cache).owned);
    ASSERT_TRUE(pool.free(second, cache).owned);
    stage.store(3);
    while (stage.load() != 4) std::this_thread::yield();
    pool.close_thread_cache(*cache);
  });
  while (stage.load() != 1) std::this_thread::yield();
  fake.arm();
  CUresult grown = CUDA_ERROR_UNKNOWN;
  OutOfMemoryCause cause = OutOfMemoryCause::kDriver;
  std::thread a([&] {
    CUdeviceptr ptr = 0;
    grown = pool.allocate(2 * kMiB, &ptr, 0, &cause);
  });
  fake.wait_entered();
  stage.store(2);
  while (stage.load() != 3) std::this_thread::yield();
  fake.open();
  a.join();
  stage.store(4);
  b.join();
  EXPECT_EQ(grown, CUDA_SUCCESS) << "refused, cause " << static_cast<int>(cause);
}

TEST(ThreadCacheFigures, ALimitLoweredBelowWhatIsInUseStopsTheCachesToo) {
  AttributedPool t;
  constexpr uint64_t kBytes = uint64_t{64} << 10;
  const CUdeviceptr kept = t.allocate(kBytes);
  for (int i = 0; i < 300; ++i) t.free(t.allocate(kBytes));  // the cache serves, with credit
  t.pool.pool.set_limit(kBytes);
  CUdeviceptr ptr = 0;
  OutOfMemoryCause cause = OutOfMemoryCause::kDriver;
  EXPECT_EQ(t.pool.pool.allocate(kBytes, &ptr, 0, &cause, t.pool.mine()), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cause, OutOfMemoryCause::kLimit);
  t.free(kept);
  t.pool.pool.set_limit(std::nullopt);
  EXPECT_NE(t.allocate(kBytes), 0u);
}

TEST(ThreadCacheFigures, EverythingElseThePoolDoesWhileThreadsAllocateThroughCaches) {
  // Four threads allocate (sizes their caches serve and sizes they do not), write their blocks on
  // random streams, free their own blocks and each other's; meanwhile another thread flushes,
  // trims, reads every figure, takes the pool's picture, readies freed blocks and once makes the
  // reuse mode stricter. Nothing may race, no figure may drift, and a last flush gives back all.
  AttributedPool t;
  constexpr int kWorkers = 4;
  const size_t kSizes[] = {512, 4096, 65536, size_t{1} << 20};
  std::vector<CUstream> streams = {CU_STREAM_LEGACY, CU_STREAM_PER_THREAD,
                                   t.pool.create_stream(CU_STREAM_DEFAULT)};
  std::mutex mutex;  // guards `streams`
  testing::PassedBlocks passed;
  std::atomic<int> working{kWorkers};
  std::atomic<bool> meddling{false};
  std::atomic<uint64_t> allocations{0};
  auto random_stream = [&](std::mt19937& rng) {
    std::lock_guard<std::mutex> guard(mutex);
    return streams[rng() % streams.size()];
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < kWorkers; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(id + 1);
      std::vector<CUdeviceptr> live;
      while (!meddling.load()) std::this_thread::yield();
      for (int i = 0; i < 20000; ++i) {
        const size_t bytes = rng() % 8 != 0
                                 ? kSizes[rng() % 4]
                                 : std::uniform_int_distribution<size_t>(1, 3 << 20)(rng);
        const CUdeviceptr ptr = t.allocate(bytes);
        allocations.fetch_add(1);
        t.pool.fake.queue_work(random_stream(rng), ptr, bytes);
        live.push_back(ptr);
        if (live.size() > 12 || rng() % 2 == 0) {
          const size_t index = rng() % live.size();
          if (rng() % 4 == 0) {
            passed.pass(live[index]);
          } else {
            t.free(live[index]);
          }
          live.erase(live.begin() + index);
        }
        if (const CUdeviceptr theirs = passed.take()) t.free(theirs);
        if (rng() % 8 == 0) t.pool.fake.finish_work(random_stream(rng));
      }
      for (CUdeviceptr ptr : live) t.free(ptr);
      t.pool.close_mine();
      working.fetch_sub(1);
    });
  }
  int rounds = 0;
  threads.emplace_back([&] {
    std::mt19937 rng(99);
    meddling.store(true);
    while (working.load() > 0) {
      switch (rng() % 8) {
        case 0:
          t.pool.pool.flush();
          break;
        case 1:
          t.pool.pool.trim(rng() % (size_t{64} << 20));
          break;
        case 2:
          t.pool.pool.stats();
          break;
        case 3:
          t.pool.pool.picture();
          break;
        case 4:
          t.pool.pool.reclaimable_bytes();
          t.pool.pool.fold_device_caches();
          break;
        case 5:
          t.attribution.tracker.snapshot();
          break;
        case 6:
          t.pool.pool.ready_freed_blocks();
          break;
        case 7:
          if (rounds > 400 && streams.size() == 3) {  // once: the reuse mode turns stricter
            const CUstream side = t.pool.create_stream(CU_STREAM_NON_BLOCKING);
            std::lock_guard<std::mutex> guard(mutex);
            streams.push_back(side);
          }
          break;
      }
      ++rounds;
    }
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(rounds, 1000) << "the pool was hardly meddled with while the threads ran";
  EXPECT_EQ(streams.size(), 4u) << "the reuse mode never turned stricter";
  while (const CUdeviceptr ptr = passed.take()) t.free(ptr);
  EXPECT_EQ(t.pool.fake.counters().conflicts, 0u);
  EXPECT_EQ(t.pool.fake.counters().bad_free, 0u);
  EXPECT_EQ(t.pool.pool.stats().in_use_bytes, 0u);
  const attribution::TrackerSnapshot snapshot = t.attribution.tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, 0u);
  uint64_t counted = 0;
  for (const attribution::SiteFigures& site : snapshot.sites) {
    EXPECT_EQ(site.live_bytes, 0u);
    EXPECT_EQ(site.live_count, 0u);
    counted += site.total_count;
  }
  EXPECT_EQ(counted, allocations.load());
  const uint64_t reserved = t.pool.pool.stats().reserved_bytes;
  EXPECT_EQ(t.pool.pool.flush().segment_bytes, reserved);
  EXPECT_EQ(t.pool.fake.live_bytes(), 0u);
}

}  // namespace
}  // namespace vramshim::pool
