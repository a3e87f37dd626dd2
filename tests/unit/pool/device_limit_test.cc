// The per-device cap: what it charges, what it refuses, a cap changed at run time, and racing
// charges under the device lock that together never pass it.
#include "shim/pool/device_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace vramshim::pool {
namespace {

TEST(DeviceLimitTest, ChargesUpToTheCapAndUnchargesWhatWasGivenBack) {
  DeviceLimit limit(100);
  EXPECT_EQ(limit.get(), 100u);
  EXPECT_TRUE(limit.try_charge(60));
  EXPECT_TRUE(limit.try_charge(40));  // exactly at the cap
  EXPECT_EQ(limit.in_use(), 100u);
  limit.uncharge(30);
  EXPECT_EQ(limit.in_use(), 70u);
  EXPECT_TRUE(limit.try_charge(30));
  EXPECT_EQ(limit.in_use(), 100u);
}

TEST(DeviceLimitTest, RefusesAChargePastTheCapAndChargesNothingForIt) {
  DeviceLimit limit(100);
  ASSERT_TRUE(limit.try_charge(90));
  EXPECT_FALSE(limit.try_charge(11));
  EXPECT_EQ(limit.in_use(), 90u);
  EXPECT_TRUE(limit.try_charge(10));
}

TEST(DeviceLimitTest, WouldFitAsksWithoutCharging) {
  DeviceLimit limit(100);
  ASSERT_TRUE(limit.try_charge(40));
  EXPECT_TRUE(limit.would_fit(60));
  EXPECT_FALSE(limit.would_fit(61));
  EXPECT_EQ(limit.in_use(), 40u);
}

TEST(DeviceLimitTest, WithoutACapEveryChargeFitsAndInUseIsStillKept) {
  DeviceLimit limit;
  EXPECT_FALSE(limit.get().has_value());
  EXPECT_TRUE(limit.would_fit(uint64_t{1} << 62));
  EXPECT_TRUE(limit.try_charge(uint64_t{1} << 40));
  EXPECT_TRUE(limit.try_charge(uint64_t{1} << 40));
  EXPECT_EQ(limit.in_use(), uint64_t{2} << 40);
}

TEST(DeviceLimitTest, ACapSetAtRunTimeAppliesAtOnceToWhatIsAlreadyInUse) {
  DeviceLimit limit;
  ASSERT_TRUE(limit.try_charge(100));
  limit.set(50);  // below what is in use: nothing more fits until enough is given back
  EXPECT_EQ(limit.get(), 50u);
  EXPECT_FALSE(limit.would_fit(1));
  EXPECT_FALSE(limit.try_charge(1));
  limit.uncharge(60);
  EXPECT_TRUE(limit.try_charge(10));
  EXPECT_FALSE(limit.try_charge(1));
  limit.set(std::nullopt);
  EXPECT_FALSE(limit.get().has_value());
  EXPECT_TRUE(limit.try_charge(1000));
  EXPECT_EQ(limit.in_use(), 1050u);
}

TEST(DeviceLimitTest, ResetInUseForgetsEveryCharge) {
  DeviceLimit limit(100);
  ASSERT_TRUE(limit.try_charge(100));
  limit.reset_in_use();
  EXPECT_EQ(limit.in_use(), 0u);
  EXPECT_TRUE(limit.try_charge(100));
}

int racing_threads() {
  return std::max(4, 2 * static_cast<int>(std::thread::hardware_concurrency()));
}

// Runs `body` on racing_threads() threads released at the same moment.
template <typename Body>
void race(Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < racing_threads(); ++i) {
    threads.emplace_back([&go, &body] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body();
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& thread : threads) thread.join();
}

// Each episode, threads charge one unit at a time until the cap refuses them: together they get
// exactly the cap. The episodes repeat because two threads overshoot only when both reach the last
// unit at the same moment.
TEST(DeviceLimitTest, RacingChargesThatFillTheCapGetExactlyTheCap) {
  constexpr int kEpisodes = 300;
  constexpr uint64_t kCap = 1000;
  for (int episode = 0; episode < kEpisodes; ++episode) {
    DeviceLimit limit(kCap);
    std::atomic<uint64_t> charged{0};
    race([&] {
      for (;;) {
        std::lock_guard<support::AdaptiveMutex> lock(limit.device_lock());
        if (!limit.try_charge(1)) break;
        charged.fetch_add(1, std::memory_order_relaxed);
      }
    });
    ASSERT_EQ(charged.load(), kCap) << "episode " << episode;
    ASSERT_EQ(limit.in_use(), kCap) << "episode " << episode;
  }
}

// Threads charge one unit, hold it a moment and give it back, against a cap of one: no charge
// may succeed while another is held. Two threads that both read the cap as free and both charge
// would hold two. They race for a while rather than a number of rounds, so that on a busy machine
// they still run at the same time.
TEST(DeviceLimitTest, RacingChargesAndUnchargesNeverHoldMoreThanTheCap) {
  constexpr uint64_t kCap = 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  DeviceLimit limit(kCap);
  std::atomic<uint64_t> held{0};
  std::atomic<uint64_t> held_past_the_cap{0};
  race([&] {
    while (std::chrono::steady_clock::now() < deadline && held_past_the_cap.load() == 0) {
      for (int round = 0; round < 1000; ++round) {
        {
          std::lock_guard<support::AdaptiveMutex> lock(limit.device_lock());
          if (!limit.try_charge(1)) continue;
        }
        if (held.fetch_add(1) + 1 > kCap) held_past_the_cap.fetch_add(1);
        // Holding a while lets the others pile up on the cap, so they race for it when it frees.
        for (int i = 0; i < 64; ++i) held.load(std::memory_order_relaxed);
        held.fetch_sub(1);
        std::lock_guard<support::AdaptiveMutex> lock(limit.device_lock());
        limit.uncharge(1);
      }
    }
  });
  EXPECT_EQ(held_past_the_cap.load(), 0u);
  EXPECT_EQ(limit.in_use(), 0u);
}

TEST(DeviceLimitTest, IsGuardedByTheDeviceLockItIsGivenElseByItsOwn) {
  support::AdaptiveMutex figures_lock;
  const DeviceLimit guarded(std::nullopt, &figures_lock);
  EXPECT_EQ(&guarded.device_lock(), &figures_lock);
  const DeviceLimit alone;
  const DeviceLimit other;
  EXPECT_NE(&alone.device_lock(), &other.device_lock());
}

}  // namespace
}  // namespace vramshim::pool
