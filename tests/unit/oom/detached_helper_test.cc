#include "shim/oom/detached_helper.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace vramshim::oom {
namespace {

using std::chrono::milliseconds;

// Holds a helper until the test opens it.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_changed;
  bool opened = false;

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    opened_changed.wait(lock, [&] { return opened; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      opened = true;
    }
    opened_changed.notify_all();
  }
};

TEST(DetachedHelperTest, FinishedWorkIsSeenByTheCaller) {
  static HelperLane lane;
  auto answer = std::make_shared<int>(0);
  DetachedHelper helper(lane, [answer] { *answer = 42; });
  EXPECT_EQ(helper.wait_until(Clock::now() + std::chrono::seconds(10)), HelperOutcome::kFinished);
  EXPECT_EQ(*answer, 42);
  EXPECT_FALSE(lane.busy());
}

TEST(DetachedHelperTest, HungWorkIsGivenUpAtTheDeadlineAndHoldsItsLane) {
  static HelperLane lane;
  auto gate = std::make_shared<Gate>();
  DetachedHelper hung(lane, [gate] { gate->wait(); });
  const auto started = Clock::now();
  EXPECT_EQ(hung.wait_until(started + milliseconds(50)), HelperOutcome::kTimedOut);
  const auto waited = Clock::now() - started;
  EXPECT_GE(waited, milliseconds(50));
  EXPECT_LT(waited, milliseconds(150));

  // While it hangs, the lane starts nothing more.
  auto ran = std::make_shared<bool>(false);
  DetachedHelper refused(lane, [ran] { *ran = true; });
  EXPECT_EQ(refused.wait_until(Clock::now() + std::chrono::seconds(1)), HelperOutcome::kBusy);
  EXPECT_FALSE(*ran);

  // Once it returns, the lane is free again.
  gate->open();
  EXPECT_EQ(hung.wait_until(Clock::now() + std::chrono::seconds(10)), HelperOutcome::kFinished);
  DetachedHelper next(lane, [] {});
  EXPECT_EQ(next.wait_until(Clock::now() + std::chrono::seconds(10)), HelperOutcome::kFinished);
}

TEST(DetachedHelperTest, AThrowingHelperEndsQuietlyAndFreesItsLane) {
  static HelperLane lane;
  DetachedHelper thrower(lane, [] { throw std::runtime_error("no"); });
  EXPECT_EQ(thrower.wait_until(Clock::now() + std::chrono::seconds(10)), HelperOutcome::kFinished);
  EXPECT_FALSE(lane.busy());
}

TEST(DetachedHelperTest, HelpersRunWithEverySignalBlocked) {
  static HelperLane lane;
  auto blocked = std::make_shared<bool>(false);
  DetachedHelper helper(lane, [blocked] {
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    *blocked = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGUSR1) == 1 &&
               sigismember(&mask, SIGTERM) == 1;
  });
  ASSERT_EQ(helper.wait_until(Clock::now() + std::chrono::seconds(10)), HelperOutcome::kFinished);
  EXPECT_TRUE(*blocked);
}

}  // namespace
}  // namespace vramshim::oom
