// The exit report, asked of the exit report's thread (ExitReportThread) by the exiting thread,
// which waits for it with nothing allocated or locked on its own side.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace vramshim::control {

enum class ExitReportOutcome {
  kWritten,   // written, or the writer said why it could not
  kStalled,   // nothing was written for the stall time: the exit goes on without it
  kNoThread,  // no thread to write it
};

// One exchange, on a futex word: idle -> asked (the exiting thread) -> answered (the writer, once
// the report is written).
class ExitReportRequest {
 public:
  // The exiting thread. A second exit path (exit() or quick_exit() from a signal handler while the
  // first waits) finds it asked, or answered, and waits for the same answer.
  void ask();
  // The exiting thread, after ask(): waits for the answer while `progress()` (bytes written by
  // reports) grows at least once per `stall`. Futex waits: no allocation, no lock.
  ExitReportOutcome wait(uint64_t (*progress)(), std::chrono::milliseconds stall);

  // The writer: waits (for ever) until asked, then answers once the report is written.
  void wait_until_asked();
  void answer();

 private:
  enum State : int { kIdle, kAsked, kAnswered };
  int* word() { return reinterpret_cast<int*>(&state_); }

  std::atomic<int> state_{kIdle};
  static_assert(sizeof(std::atomic<int>) == sizeof(int), "a futex word");
};

}  // namespace vramshim::control
