// The exit report, asked of its own thread by the exiting thread (ExitReportThread): waited for
// while it writes, given up once it writes nothing for the stall time.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "shim/control/exit_report_thread.h"

namespace vramshim::control {
namespace {

using std::chrono::milliseconds;

std::atomic<uint64_t> g_bytes_written{0};
uint64_t bytes_written() { return g_bytes_written.load(); }

// A report writer that waits for `lock`, as the shim's report waits for the pools' locks.
struct Writer {
  std::mutex lock;
  std::atomic<int> reports{0};
  std::function<void()> write() {
    return [this] {
      const std::lock_guard<std::mutex> held(lock);
      ++reports;
    };
  }
};

TEST(ExitReportTest, ItsThreadWritesItWhileTheExitingThreadWaits) {
  ExitReportThread thread;
  Writer writer;
  ASSERT_TRUE(thread.start(writer.write()));
  EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(10000)), ExitReportOutcome::kWritten);
  EXPECT_EQ(writer.reports, 1);
  // A second exit path (quick_exit from a signal handler) finds it written, and writes none again.
  EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(100)), ExitReportOutcome::kWritten);
  EXPECT_EQ(writer.reports, 1);
}

TEST(ExitReportTest, AReportThatWritesNothingForTheStallTimeIsGivenUp) {
  ExitReportThread thread;
  auto* writer = new Writer;  // left to the thread, which goes on once the lock is free
  ASSERT_TRUE(thread.start(writer->write()));
  {
    const std::lock_guard<std::mutex> held(writer->lock);
    EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(200)), ExitReportOutcome::kStalled);
    EXPECT_EQ(writer->reports, 0);
  }
}

TEST(ExitReportTest, AReportThatKeepsWritingIsWaitedFor) {
  ExitReportThread thread;
  Writer writer;
  ASSERT_TRUE(thread.start(writer.write()));
  // Another report holds the lock, writing bytes now and then for five stall times.
  std::atomic<bool> locked{false};
  std::thread other([&] {
    const std::lock_guard<std::mutex> held(writer.lock);
    locked = true;
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(milliseconds(50));
      g_bytes_written += 100;
    }
  });
  while (!locked) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(100)), ExitReportOutcome::kWritten);
  other.join();
  EXPECT_EQ(writer.reports, 1);
}

void ignore_signal(int) {}

// The program's signals (a timer, a profiler's) end each futex wait early: the stall is still seen
// (when every signal started the stall time again, a signal every 50 ms kept the exit waiting for
// good).
TEST(ExitReportTest, SignalsToTheExitingThreadDoNotPostponeTheStall) {
  struct sigaction action = {};
  action.sa_handler = &ignore_signal;  // no SA_RESTART: the wait returns EINTR
  struct sigaction previous = {};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);
  ExitReportThread thread;
  auto* writer = new Writer;  // left to the thread, which goes on once the lock is free
  ASSERT_TRUE(thread.start(writer->write()));
  const pthread_t exiting = ::pthread_self();
  std::atomic<bool> done{false};
  std::thread interrupter([&] {
    while (!done) {
      std::this_thread::sleep_for(milliseconds(50));
      ::pthread_kill(exiting, SIGUSR1);
    }
  });
  {
    const std::lock_guard<std::mutex> held(writer->lock);
    EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(200)), ExitReportOutcome::kStalled);
  }
  done = true;
  interrupter.join();
  ::sigaction(SIGUSR1, &previous, nullptr);
}

TEST(ExitReportTest, NoThreadNoReport) {
  ExitReportThread thread;
  EXPECT_EQ(thread.write_report(&bytes_written, milliseconds(100)), ExitReportOutcome::kNoThread);
}

}  // namespace
}  // namespace vramshim::control
