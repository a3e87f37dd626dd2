// Runs work on a thread of its own and waits for it a bounded time: for work that may meet a lock
// the calling thread itself holds (exit() called from a signal handler that interrupted a hook).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace vramshim::support {

// Whether `work` finished within `limit`. When it did not, it goes on running on its thread,
// detached. Without a thread to spare, it runs on the calling thread.
template <typename Work>
bool run_within(std::chrono::milliseconds limit, Work work) {
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
  return completion->finished.wait_for(lock, limit, [&] { return completion->done; });
}

}  // namespace vramshim::support
