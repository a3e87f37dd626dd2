// A barrier for a fixed number of threads, reusable round after round (std::barrier is C++20).
#pragma once

#include <condition_variable>
#include <mutex>

namespace vramshim::testing {

class ThreadBarrier {
 public:
  explicit ThreadBarrier(int count) : count_(count) {}
  // Returns once `count` threads have arrived in this round.
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int count_;
  int arrived_ = 0, generation_ = 0;
};

}  // namespace vramshim::testing
