#include "shim/support/adaptive_mutex.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vramshim::support
