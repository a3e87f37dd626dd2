// The pools of one device's contexts take one lock, the device lock of their DeviceLimit: the
// tracker's figures lock of that device when they are attributed (TrackerTagger), so that a pool's
// call, the figures it changes and the device's charge take one lock between them. The rule this
// holds: the figures and the device's charge stay exact while those pools are driven from threads
// of their own.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "shim/attribution/tracker.h"
#include "shim/pool/caching_pool.h"
#include "shim/pool/size_policy.h"
#include "tests/unit/pool/fake_device_api.h"
#include "tests/unit/pool/pool_attribution.h"

namespace vramshim::pool {
namespace {

using Attribution = testing::PoolAttribution;

// `count` contexts of one device, each with its pool, all charging `limit`.
struct DevicePools {
  DevicePools(int count, DeviceLimit& limit, const CaptureState& capture,
              AllocationTagger* tagger = nullptr, int device = 0) {
    for (int p = 0; p < count; ++p) {
      contexts.push_back(std::make_unique<testing::FakeDeviceApi>());
      pools.push_back(std::make_unique<CachingPool>(*contexts.back(), PoolOptions{}, limit, capture,
                                                    tagger, device));
    }
  }
  std::vector<std::unique_ptr<testing::FakeDeviceApi>> contexts;
  std::vector<std::unique_ptr<CachingPool>> pools;
};

TEST(SharedFiguresLock, PoolsOfOneDeviceKeepExactFiguresWhenEachHasAThreadOfItsOwn) {
  constexpr int kDevice = 2;
  constexpr int kPools = 4;
  constexpr int kPairs = 40000;
  Attribution attribution;
  attribution::Tracker& tracker = attribution.tracker;
  CaptureState capture;
  DeviceLimit limit(std::nullopt, &tracker.figures_lock(kDevice));
  DevicePools device(kPools, limit, capture, &attribution.tagger, kDevice);
  std::vector<std::unique_ptr<CachingPool>>& pools = device.pools;
  // Every fourth allocation stays live.
  std::vector<std::vector<CUdeviceptr>> kept(kPools);
  uint64_t kept_bytes = 0;
  for (int i = 0; i < kPairs; i += 4) kept_bytes += SizePolicy::round(4096 * (1 + i % 3));
  std::vector<std::thread> threads;
  for (int p = 0; p < kPools; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPairs; ++i) {
        const size_t bytes = 4096 * (1 + i % 3);
        const uint64_t request =
            tracker.prepare(SizePolicy::round(bytes), attribution::AllocationKind::kDevice);
        CUdeviceptr ptr = 0;
        ASSERT_EQ(pools[p]->allocate(bytes, &ptr, request), CUDA_SUCCESS);
        if (i % 4 == 0) {
          kept[p].push_back(ptr);
        } else {
          ASSERT_TRUE(pools[p]->free(ptr).owned);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  attribution::TrackerSnapshot snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, kPools * kept_bytes);
  ASSERT_EQ(snapshot.sites.size(), 1u);
  EXPECT_EQ(snapshot.sites[0].live_bytes, kPools * kept_bytes);
  EXPECT_EQ(snapshot.sites[0].live_count, uint64_t{kPools} * kPairs / 4);
  EXPECT_EQ(snapshot.sites[0].total_count, uint64_t{kPools} * kPairs);
  EXPECT_GE(snapshot.peak_in_use_bytes, kPools * kept_bytes);
  EXPECT_EQ(limit.in_use(), kPools * kept_bytes);

  for (int p = 0; p < kPools; ++p) {
    for (CUdeviceptr ptr : kept[p]) ASSERT_TRUE(pools[p]->free(ptr).owned);
  }
  snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, 0u);
  EXPECT_EQ(snapshot.sites[0].live_count, 0u);
  EXPECT_EQ(limit.in_use(), 0u);
}

// Without a tagger the pools take the limit's own lock: the device's charge stays exact.
TEST(SharedFiguresLock, UntaggedPoolsOfOneDeviceChargeItsLimitExactly) {
  constexpr int kPools = 4;
  constexpr int kPairs = 40000;
  CaptureState capture;
  DeviceLimit limit;
  DevicePools device(kPools, limit, capture);
  std::vector<std::unique_ptr<CachingPool>>& pools = device.pools;
  std::vector<CUdeviceptr> kept(kPools);
  std::vector<std::thread> threads;
  for (int p = 0; p < kPools; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPairs; ++i) {
        CUdeviceptr ptr = 0;
        ASSERT_EQ(pools[p]->allocate(4096 * (1 + i % 3), &ptr), CUDA_SUCCESS);
        ASSERT_TRUE(pools[p]->free(ptr).owned);
      }
      ASSERT_EQ(pools[p]->allocate(4096, &kept[p]), CUDA_SUCCESS);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(limit.in_use(), kPools * SizePolicy::round(4096));
}

// A tagged pool whose limit another lock guards would change the figures and the charge under
// different locks: it is refused.
TEST(SharedFiguresLock, ATaggedPoolNeedsALimitGuardedByTheFiguresLock) {
  Attribution attribution;
  CaptureState capture;
  DeviceLimit unguarded;
  EXPECT_THROW(DevicePools(1, unguarded, capture, &attribution.tagger), std::invalid_argument);
  DeviceLimit guarded(std::nullopt, &attribution.tracker.figures_lock(0));
  EXPECT_NO_THROW(DevicePools(1, guarded, capture, &attribution.tagger));
}

}  // namespace
}  // namespace vramshim::pool
