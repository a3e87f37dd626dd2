// What the capture probe's kept answers rely on (shim/runtime/capture_probe): CaptureState's
// changes move whenever what the driver allows threads may have changed.
#include "shim/pool/capture_state.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace vramshim::pool {
namespace {

// A thread asking the driver while a begin is under way (counted, not yet made) is told the
// calls are allowed; the count it read must not stay current once the driver has begun.
TEST(CaptureState, ChangesMoveOnceTheDriverAnsweredABegin) {
  CaptureState capture;
  capture.on_capture_begin(nullptr, nullptr);
  const uint64_t while_beginning = capture.changes();
  capture.after_capture_begin();
  EXPECT_NE(capture.changes(), while_beginning);
  EXPECT_TRUE(capture.active());
}

TEST(CaptureState, ChangesMoveWhenACaptureEndsOrGoesWithItsStream) {
  CaptureState capture;
  const CUstream stream = reinterpret_cast<CUstream>(0x10);
  capture.on_capture_begin(stream, nullptr);
  capture.after_capture_begin();
  uint64_t before = capture.changes();
  capture.on_capture_end(stream, nullptr);
  EXPECT_NE(capture.changes(), before);
  capture.on_capture_begin(stream, nullptr);
  capture.after_capture_begin();
  before = capture.changes();
  EXPECT_EQ(capture.on_stream_gone(stream), 1);
  EXPECT_NE(capture.changes(), before);
  EXPECT_FALSE(capture.active());
}

// Threads count their calls in shards of their own: a begin waits for every thread's call in
// flight, more threads than shards included, and then no thread may enter.
TEST(CaptureState, ABeginWaitsForTheCallsInFlightOfEveryThread) {
  using Clock = std::chrono::steady_clock;
  CaptureState capture;
  constexpr int kThreads = 20;
  std::atomic<int> entered{0};
  std::atomic<int> released{0};
  std::atomic<int> refused_after{0};
  std::atomic<bool> begun{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      EXPECT_TRUE(capture.enter_forbidden_call());
      ++entered;
      while (released.load() <= t) std::this_thread::yield();
      capture.leave_forbidden_call();
      while (!begun.load()) std::this_thread::yield();
      if (!capture.enter_forbidden_call()) ++refused_after;
    });
  }
  while (entered.load() != kThreads) std::this_thread::yield();
  Clock::time_point returned;
  const Clock::time_point started = Clock::now();
  std::thread beginner([&] {
    capture.on_capture_begin(nullptr, nullptr);
    returned = Clock::now();
    begun = true;
  });
  // One thread at a time leaves its call, the last one after a pause.
  for (int t = 0; t < kThreads - 1; ++t) released = t + 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Clock::time_point last_released = Clock::now();
  released = kThreads;
  beginner.join();
  for (std::thread& thread : threads) thread.join();
  // It returned after the last call left, unless the machine stalled past its 200 ms deadline.
  EXPECT_TRUE(returned >= last_released || returned - started >= std::chrono::milliseconds(200));
  EXPECT_EQ(refused_after.load(), kThreads);
}

}  // namespace
}  // namespace vramshim::pool
