#include "shim/oom/detached_helper.h"

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "shim/support/own_threads.h"

namespace vramshim::oom {

struct DetachedHelper::State {
  std::function<void()> work;
  HelperLane* lane = nullptr;
  std::mutex mutex;
  std::condition_variable finished_changed;
  bool finished = false;
};

void* DetachedHelper::run(void* argument) {
  const support::OwnThread own;
  auto* handed_over = static_cast<std::shared_ptr<State>*>(argument);
  std::shared_ptr<State> state = std::move(*handed_over);
  delete handed_over;
  try {
    state->work();
  } catch (...) {
    // A helper's failure is its caller's missing answer, never the process's end.
  }
  state->work = nullptr;  // drops what the work captured, on this thread
  state->lane->busy_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->finished = true;
  }
  state->finished_changed.notify_all();
  return nullptr;
}

DetachedHelper::DetachedHelper(HelperLane& lane, std::function<void()> work) {
  bool expected = false;
  if (!lane.busy_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  auto state = std::make_shared<State>();
  state->work = std::move(work);
  state->lane = &lane;
  auto* handed_over = new std::shared_ptr<State>(state);

  const int error = support::start_own_thread(run, handed_over);
  if (error != 0) {
    delete handed_over;
    lane.busy_.store(false, std::memory_order_release);
    not_started_ = HelperOutcome::kNoThread;
    start_error_ = std::strerror(error);
    return;
  }
  state_ = std::move(state);
}

HelperOutcome DetachedHelper::wait_until(Clock::time_point deadline) {
  if (state_ == nullptr) return not_started_;
  std::unique_lock<std::mutex> lock(state_->mutex);
  const bool finished =
      state_->finished_changed.wait_until(lock, deadline, [&] { return state_->finished; });
  return finished ? HelperOutcome::kFinished : HelperOutcome::kTimedOut;
}

}  // namespace vramshim::oom
