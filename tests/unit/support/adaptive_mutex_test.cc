#include "shim/support/adaptive_mutex.h"

#include <gtest/gtest.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace vramshim::support {
namespace {

// Four threads add to a plain counter under the mutex: without mutual exclusion increments are
// lost (each addition reads, yields and writes back, so an unguarded one loses nearly every race).
TEST(AdaptiveMutex, ExcludesOtherThreads) {
  AdaptiveMutex mutex;
  uint64_t counter = 0;
  constexpr int kThreads = 4;
  constexpr int kAdditions = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdditions; ++i) {
        std::lock_guard<AdaptiveMutex> lock(mutex);
        const uint64_t seen = counter;
        if (i % 64 == 0) std::this_thread::yield();
        counter = seen + 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kAdditions);
}

TEST(AdaptiveMutex, TryLockFailsWhileHeldElsewhere) {
  AdaptiveMutex mutex;
  ASSERT_TRUE(mutex.try_lock());
  bool taken_elsewhere = true;
  std::thread([&] { taken_elsewhere = mutex.try_lock(); }).join();
  EXPECT_FALSE(taken_elsewhere);
  mutex.unlock();
  std::thread([&] {
    taken_elsewhere = mutex.try_lock();
    if (taken_elsewhere) mutex.unlock();
  }).join();
  EXPECT_TRUE(taken_elsewhere);
}

// The pool waits for its fence claim through std::condition_variable_any on this mutex.
TEST(AdaptiveMutex, WaitsOnConditionVariableAny) {
  AdaptiveMutex mutex;
  std::condition_variable_any released;
  bool claimed = true;
  std::thread releaser([&] {
    std::lock_guard<AdaptiveMutex> lock(mutex);
    claimed = false;
    released.notify_all();
  });
  {
    std::unique_lock<AdaptiveMutex> lock(mutex);
    released.wait(lock, [&] { return !claimed; });
    EXPECT_FALSE(claimed);
  }
  releaser.join();
}

uint64_t thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
}

// An unlock wakes no one: a thread waiting behind a long hold must neither burn its CPU meanwhile
// nor miss the release.
TEST(AdaptiveMutex, AWaiterBehindALongHoldSleepsAndTakesTheLockOnceReleased) {
  AdaptiveMutex mutex;
  mutex.lock();
  std::atomic<bool> released{false};
  std::atomic<bool> taken{false};
  bool taken_before_release = false;
  uint64_t waiting_cpu_ns = 0;
  std::thread waiter([&] {
    const uint64_t before = thread_cpu_ns();
    mutex.lock();
    waiting_cpu_ns = thread_cpu_ns() - before;
    taken_before_release = !released.load();
    taken.store(true);
    mutex.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(taken.load());
  released.store(true);
  mutex.unlock();
  waiter.join();
  EXPECT_TRUE(taken.load());
  EXPECT_FALSE(taken_before_release);
  // Spinning for the whole hold would cost about 400 ms of CPU; naps cost a few.
  EXPECT_LT(waiting_cpu_ns, uint64_t{100} * 1000 * 1000);
}

TEST(AdaptiveMutex, EveryWaiterGetsTheLockAfterAHold) {
  AdaptiveMutex mutex;
  mutex.lock();
  constexpr int kWaiters = 8;
  int entered = 0;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] {
      std::lock_guard<AdaptiveMutex> lock(mutex);
      ++entered;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  mutex.unlock();
  for (std::thread& waiter : waiters) waiter.join();
  EXPECT_EQ(entered, kWaiters);
}

}  // namespace
}  // namespace vramshim::support
