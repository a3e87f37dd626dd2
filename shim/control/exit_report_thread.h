// A thread that waits from the runtime's start to write the exit report when exit() asks for it.
// The exiting thread then allocates and locks nothing: exit() may come from a signal handler that
// interrupted malloc, or the shim's own work, on that thread, whose locks stay held (a helper
// thread started at exit waited for ever on malloc's lock). And the report waits for no other work
// of the shim's: the control thread may be flushing for seconds (a device's frees) when the
// program ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "shim/control/exit_report_request.h"

namespace vramshim::control {

class ExitReportThread {
 public:
  // Starts the thread with every signal blocked; `write` writes the report (and logs where, or why
  // not) on it. False when no thread could be made (then nothing waits for write_report()).
  bool start(std::function<void()> write);

  // The exit path: asks for the report and waits for it while reports write bytes (`progress()`
  // grows at least once per `stall`); kNoThread when the thread was not started.
  ExitReportOutcome write_report(uint64_t (*progress)(), std::chrono::milliseconds stall);

 private:
  struct State {
    std::function<void()> write;
    ExitReportRequest request;
  };
  static void* run(void* state);

  State* state_ = nullptr;  // never freed: the thread waits on it until the process ends
};

}  // namespace vramshim::control
