#include "shim/control/exit_report_request.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace vramshim::control {

void ExitReportRequest::ask() {
  int idle = kIdle;
  if (state_.compare_exchange_strong(idle, kAsked)) {
    ::syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

void ExitReportRequest::wait_until_asked() {
  while (state_.load() == kIdle) {
    ::syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, kIdle, nullptr, nullptr, 0);
  }
}

namespace {

int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

}  // namespace

ExitReportOutcome ExitReportRequest::wait(uint64_t (*progress)(), std::chrono::milliseconds stall) {
  const int64_t stall_ns = static_cast<int64_t>(stall.count()) * 1000000;
  uint64_t before = progress();
  // A deadline, not a timeout per wait: a program's signals every few seconds, each ending a
  // wait early (EINTR), must not keep the stall from ever being seen.
  int64_t deadline = monotonic_ns() + stall_ns;
  while (state_.load() == kAsked) {
    const int64_t left = deadline - monotonic_ns();
    if (left <= 0) {
      const uint64_t now = progress();
      if (now == before && state_.load() == kAsked) return ExitReportOutcome::kStalled;
      before = now;
      deadline = monotonic_ns() + stall_ns;
      continue;
    }
    const timespec timeout = {static_cast<time_t>(left / 1000000000),
                              static_cast<long>(left % 1000000000)};
    // Returns at once once the word is no longer kAsked, at the time-out, or on a signal.
    ::syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, kAsked, &timeout, nullptr, 0);
  }
  return ExitReportOutcome::kWritten;
}

void ExitReportRequest::answer() {
  state_.store(kAnswered);
  ::syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace vramshim::control
