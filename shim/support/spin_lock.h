// A lock for critical sections of a few dozen instructions that many threads enter at once (the
// tracker's figures): a waiter spins with the CPU's pause hint, then yields, instead of sleeping in
// the kernel on a holder that is about to let go (std::mutex's futex round trip costs far more than
// the section). Not for sections that call out or block.
#pragma once

#include <sched.h>

#include <atomic>

namespace vramshim::support {

class SpinLock {
 public:
  void lock() {
    int spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
          pause();
        } else {
          sched_yield();  // the holder may have been preempted
          spins = 0;
        }
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 128;

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace vramshim::support
