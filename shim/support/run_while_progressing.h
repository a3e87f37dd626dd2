// Runs work on a thread of its own and waits for it while it makes progress: for work that may
// meet a lock the calling thread itself holds (exit() called from a signal handler that interrupted
// a hook), without giving up on work that is merely long (a report of a gigabyte).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace vramshim::support {

// Whether `work` finished. It is given up on once `progress()` (a count that grows while the work
// goes on) stayed the same for `stall`; it then goes on running on its thread, detached. Without a
// thread to spare, it runs on the calling thread.
template <typename Work, typename Progress>
bool run_while_progressing(std::chrono::milliseconds stall, Progress progress, Work work) {
  struct Completion {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
  };
  const auto completion = std::make_shared<Completion>();
  try {
    std::thread([completion, work]() mutable {
      work();
      std::lock_guard<std::mutex> lock(completion->mutex);
      completion->done = true;
      completion->finished.notify_all();
    }).detach();
  } catch (const std::exception&) {
    work();
    return true;
  }
  std::unique_lock<std::mutex> lock(completion->mutex);
  for (;;) {
    const auto before = progress();
    if (completion->finished.wait_for(lock, stall, [&] { return completion->done; })) return true;
    if (progress() == before) return false;
  }
}

}  // namespace vramshim::support
