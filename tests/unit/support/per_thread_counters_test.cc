#include "shim/support/per_thread_counters.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <thread>
#include <vector>

namespace vramshim::support {
namespace {

using Counters = PerThreadCounters<3>;

// As the library defines them: at namespace scope, one Slot per thread.
Counters counters;
thread_local Counters::Slot slot;

TEST(PerThreadCounters, ASumCountsEveryThreadsAdds) {
  const uint64_t before = counters.sum(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 100000; ++i) counters.add(slot, 1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counters.sum(1) - before, 400000u);
}

TEST(PerThreadCounters, AnExitedThreadsBlockServesTheNextThreadAndKeepsItsCounts) {
  counters.add(slot, 0);  // this thread's block
  const uint64_t before = counters.sum(0);
  for (int t = 0; t < 50; ++t) std::thread([] { counters.add(slot, 0); }).join();
  EXPECT_EQ(counters.sum(0) - before, 50u);
  // One block each for this thread and the first test's 4 threads, which the 50 took over.
  EXPECT_LE(counters.block_count(), 5u);
}

// A thread-exit destructor that runs after the counters gave the thread's block back (keys'
// destructors run in the order the keys were made, and the counters' key is older) and counts.
pthread_key_t late_key;
void count_late(void*) { counters.add(slot, 2); }

TEST(PerThreadCounters, ACountAtThreadExitAfterTheBlockWasGivenBackIsKept) {
  counters.add(slot, 2);  // the counters' key exists before late_key
  ASSERT_EQ(pthread_key_create(&late_key, &count_late), 0);
  const uint64_t before = counters.sum(2);
  const size_t blocks_before = counters.block_count();
  for (int t = 0; t < 20; ++t) {
    std::thread([] {
      counters.add(slot, 2);
      pthread_setspecific(late_key, &late_key);
    }).join();
  }
  EXPECT_EQ(counters.sum(2) - before, 40u);
  // The late count claimed a block again and gave it back again: no block per thread.
  EXPECT_LE(counters.block_count(), blocks_before + 1);
  pthread_key_delete(late_key);
}

}  // namespace
}  // namespace vramshim::support
