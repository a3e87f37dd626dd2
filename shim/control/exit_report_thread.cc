#include "shim/control/exit_report_thread.h"

#include <new>
#include <utility>

#include "shim/control/log.h"
#include "shim/support/own_threads.h"

namespace vramshim::control {

bool ExitReportThread::start(std::function<void()> write) {
  if (state_ != nullptr) return true;
  auto* state = new (std::nothrow) State{std::move(write), {}};
  if (state == nullptr) return false;
  if (support::start_own_thread(&ExitReportThread::run, state) != 0) {
    delete state;
    return false;
  }
  state_ = state;
  return true;
}

ExitReportOutcome ExitReportThread::write_report(uint64_t (*progress)(),
                                                 std::chrono::milliseconds stall) {
  if (state_ == nullptr) return ExitReportOutcome::kNoThread;
  state_->request.ask();
  return state_->request.wait(progress, stall);
}

void* ExitReportThread::run(void* argument) {
  const support::OwnThread own;
  State& state = *static_cast<State*>(argument);
  state.request.wait_until_asked();
  try {
    state.write();
  } catch (...) {
    log(LogLevel::kWarn, "no exit report: the report failed with an exception");
  }
  state.request.answer();
  return nullptr;
}

}  // namespace vramshim::control
