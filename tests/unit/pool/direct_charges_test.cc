// Device memory the driver serves itself, charged to the device's cap: kept by key until its free,
// given back when the driver refused, counted by the cap and by cuMemGetInfo's figures but in no
// peak of the pools', and never past the cap among racing threads; a size that would wrap the count
// never fits.
#include "shim/pool/direct_charges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "shim/pool/device_limit.h"

namespace vramshim::pool {
namespace {

TEST(DirectChargesTest, AChargeIsKeptUntilTheAllocationsFree) {
  DeviceLimit limit(100);
  DirectCharges charges;
  DirectCharges::Charge charge;
  ASSERT_TRUE(DirectCharges::charge(limit, 60, &charge));
  charges.settle(charge, /*served=*/true, 7);
  EXPECT_EQ(limit.in_use(), 60u);
  EXPECT_EQ(limit.direct_bytes(), 60u);
  DirectCharges::Charge refused;
  EXPECT_FALSE(DirectCharges::charge(limit, 41, &refused));
  EXPECT_EQ(refused.limit, nullptr);
  EXPECT_EQ(limit.in_use(), 60u);
  EXPECT_EQ(charges.take(8).limit, nullptr);  // not charged
  const DirectCharges::Charge taken = charges.take(7);
  EXPECT_EQ(taken.bytes, 60u);
  EXPECT_EQ(limit.in_use(), 60u);  // until the driver freed it
  EXPECT_EQ(charges.size(), 0u);
  DirectCharges::give_back(taken);
  EXPECT_EQ(limit.in_use(), 0u);
  EXPECT_EQ(limit.direct_bytes(), 0u);
  EXPECT_EQ(charges.take(7).limit, nullptr);  // a second free of the key takes nothing more
}

TEST(DirectChargesTest, AChargeTheDriverRefusedIsGivenBack) {
  DeviceLimit limit(100);
  DirectCharges charges;
  DirectCharges::Charge charge;
  ASSERT_TRUE(DirectCharges::charge(limit, 100, &charge));
  EXPECT_FALSE(limit.would_fit(1));  // held while the driver answers
  charges.settle(charge, /*served=*/false, 7);
  EXPECT_EQ(limit.in_use(), 0u);
  EXPECT_EQ(charges.size(), 0u);
}

// A key the driver hands out again before the old allocation's free was seen (another thread's
// release racing the new allocation) keeps one charge, the new one.
TEST(DirectChargesTest, AKeyChargedAgainKeepsOnlyItsNewCharge) {
  DeviceLimit limit(100);
  DirectCharges charges;
  DirectCharges::Charge first, second;
  ASSERT_TRUE(DirectCharges::charge(limit, 30, &first));
  charges.settle(first, true, 7);
  ASSERT_TRUE(DirectCharges::charge(limit, 50, &second));
  charges.settle(second, true, 7);
  EXPECT_EQ(limit.in_use(), 50u);
  DirectCharges::give_back(charges.take(7));
  EXPECT_EQ(limit.in_use(), 0u);
}

TEST(DirectChargesTest, ChargesShareTheCapWithThePoolsButNotTheirPeak) {
  DeviceLimit limit(100);
  DirectCharges charges;
  DirectCharges::Charge charge;
  ASSERT_TRUE(DirectCharges::charge(limit, 70, &charge));
  charges.settle(charge, true, 7);
  EXPECT_FALSE(limit.above_peak_in_use());
  limit.note_peak_in_use();
  EXPECT_EQ(limit.peak_in_use(), 0u);
  EXPECT_FALSE(limit.try_charge(31));  // the pool's charge meets the direct memory's
  ASSERT_TRUE(limit.try_charge(30));
  EXPECT_TRUE(limit.above_peak_in_use());
  limit.note_peak_in_use();
  EXPECT_EQ(limit.peak_in_use(), 30u);
  DirectCharges::give_back(charges.take(7));
  EXPECT_EQ(limit.in_use(), 30u);
}

// Charged with no cap set, so that a cap set later counts what is already in use.
TEST(DirectChargesTest, MemoryChargedBeforeACapWasSetCountsAgainstIt) {
  DeviceLimit limit;
  DirectCharges charges;
  DirectCharges::Charge charge;
  ASSERT_TRUE(DirectCharges::charge(limit, uint64_t{1} << 40, &charge));
  charges.settle(charge, true, 7);
  limit.set(uint64_t{1} << 40);
  DirectCharges::Charge more;
  EXPECT_FALSE(DirectCharges::charge(limit, 1, &more));
  DirectCharges::give_back(charges.take(7));
  EXPECT_TRUE(DirectCharges::charge(limit, 1, &more));
}

// A free the driver refused leaves the memory allocated: its charge is kept again.
TEST(DirectChargesTest, AChargeTakenForAFreeTheDriverRefusedIsKeptAgain) {
  DeviceLimit limit(100);
  DirectCharges charges;
  DirectCharges::Charge charge;
  ASSERT_TRUE(DirectCharges::charge(limit, 60, &charge));
  charges.settle(charge, true, 7);
  charges.settle(charges.take(7), true, 7);
  EXPECT_EQ(limit.in_use(), 60u);
  EXPECT_EQ(charges.size(), 1u);
  DirectCharges::give_back(charges.take(7));
  EXPECT_EQ(limit.in_use(), 0u);
}

// A request of nearly 2^64 bytes (a negative size cast to size_t) would wrap the count to a small
// number and let other threads past the cap while the driver looks at it.
TEST(DirectChargesTest, ASizeThatWouldWrapTheCountNeverFits) {
  DeviceLimit capped(256);
  DirectCharges::Charge held, huge;
  ASSERT_TRUE(DirectCharges::charge(capped, 200, &held));
  EXPECT_FALSE(DirectCharges::charge(capped, UINT64_MAX - 150, &huge));
  EXPECT_FALSE(capped.would_fit(UINT64_MAX - 150));
  EXPECT_EQ(capped.in_use(), 200u);
  DeviceLimit uncapped;
  ASSERT_TRUE(DirectCharges::charge(uncapped, 200, &held));
  EXPECT_FALSE(DirectCharges::charge(uncapped, UINT64_MAX - 150, &huge));
  EXPECT_EQ(uncapped.in_use(), 200u);
}

// Threads allocate and free at once against a cap of four units: the driver-served memory they hold
// together, counted as it is handed out, never passes the cap, and everything is given back. The
// cap is full when they start, until one of them is refused: on two cores, threads that each hold
// one unit for a moment rarely hold five at once, and a loaded machine ran them one after another
// (no refusal in 2 of 2 runs).
TEST(DirectChargesTest, RacingThreadsNeverHoldMoreThanTheCap) {
  constexpr uint64_t kCap = 4;
  DeviceLimit limit(kCap);
  DirectCharges charges;
  std::atomic<uint64_t> held{0};
  std::atomic<uint64_t> past_the_cap{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<bool> go{false};
  std::atomic<int> finished{0};
  std::vector<DirectCharges::Charge> filling(kCap);
  for (DirectCharges::Charge& charge : filling) {
    ASSERT_TRUE(DirectCharges::charge(limit, 1, &charge));
  }
  std::vector<std::thread> threads;
  const int count = std::max(8, 2 * static_cast<int>(std::thread::hardware_concurrency()));
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (uint64_t round = 0; round < 20000; ++round) {
        DirectCharges::Charge charge;
        if (!DirectCharges::charge(limit, 1, &charge)) {
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const uint64_t key = (static_cast<uint64_t>(t) << 32) | round;
        const bool served = round % 7 != 0;  // the driver refuses some
        charges.settle(charge, served, key);
        if (!served) continue;
        if (held.fetch_add(1) + 1 > kCap) past_the_cap.fetch_add(1);
        held.fetch_sub(1);
        DirectCharges::give_back(charges.take(key));
      }
      ++finished;
    });
  }
  go.store(true, std::memory_order_release);
  while (refused.load() == 0 && finished.load() < count) std::this_thread::yield();
  for (const DirectCharges::Charge& charge : filling) DirectCharges::give_back(charge);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(past_the_cap.load(), 0u);
  EXPECT_GT(refused.load(), 0u) << "a full cap refused nothing";
  EXPECT_EQ(limit.in_use(), 0u);
  EXPECT_EQ(limit.direct_bytes(), 0u);
  EXPECT_EQ(charges.size(), 0u);
}

}  // namespace
}  // namespace vramshim::pool
