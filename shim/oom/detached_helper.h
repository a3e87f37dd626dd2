// Work that may hang — NVML's calls, a /proc read that waits for another process's memory lock —
// runs on a short-lived thread of its own, and the caller waits for it only until a deadline. After
// that the thread is left to finish, or to hang, alone: it costs a thread, never the caller.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace vramshim::oom {

using Clock = std::chrono::steady_clock;

// One kind of helper work, at most one run of it at a time: a call that hangs forever leaves one
// thread behind, not one per out-of-memory error. Must outlive every run (a static object).
class HelperLane {
 public:
  bool busy() const { return busy_.load(std::memory_order_acquire); }

 private:
  friend class DetachedHelper;
  std::atomic<bool> busy_{false};
};

enum class HelperOutcome {
  kFinished,  // the work returned before the deadline
  kTimedOut,  // it still runs, detached
  kBusy,      // not started: the lane's previous work has not returned
  kNoThread,  // not started: no thread could be created
};

class DetachedHelper {
 public:
  // Starts `work` on a new detached thread with every signal blocked, unless `lane` is busy. `work`
  // must own what it touches (captures by value or shared_ptr): after a time-out it runs on
  // unattended. An exception it throws ends it quietly.
  DetachedHelper(HelperLane& lane, std::function<void()> work);

  // Waits until the work has returned or `deadline` has passed. kFinished makes everything the
  // work wrote visible to the caller.
  HelperOutcome wait_until(Clock::time_point deadline);

  // Why no thread was created, for kNoThread.
  const std::string& start_error() const { return start_error_; }

 private:
  struct State;
  static void* run(void* state);

  std::shared_ptr<State> state_;  // null when not started
  HelperOutcome not_started_ = HelperOutcome::kBusy;
  std::string start_error_;
};

}  // namespace vramshim::oom
