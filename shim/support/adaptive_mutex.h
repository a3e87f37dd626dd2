// A mutex that spins briefly before it sleeps, for the locks the allocation path takes.
#pragma once

#include <atomic>
#include <cstdint>

namespace vramshim::support {

// One word: 0 free, 1 held. Locking is one atomic exchange; unlocking is a plain release store.
// The allocation path holds its locks for some tens of nanoseconds and writes a dozen cache lines
// under them; an unlock that is an atomic read-modify-write (as in any mutex that wakes sleepers,
// glibc's included) waits for all those stores to drain. Against glibc's adaptive mutex this lock
// took 13 ns off the uncontended pool-hit pair, which locks and unlocks twice (bench/shim,
// BM_ShimPair/4096: 91 -> 78 ns, min of 5 interleaved rounds of builds differing only in the lock).
//
// The price of the plain store is that an unlock wakes no one: a waiter spins (bounded, watching
// the word), and once the holder has held on past the spin it sleeps in short naps, which double
// from 50 us to 1 ms, and looks again. Locks of the allocation path are never held across a driver
// call, so a nap happens only behind a long bookkeeping pass (a report's picture of the pool, the
// merge of a million cached blocks), and delays that waiter past the release by at most one nap:
// 50 us, or at most as long as it had already waited once the naps have grown.
// An unbounded spin lock, tried before, burned the waiting CPU. Satisfies Lockable, for
// std::lock_guard, std::unique_lock and std::condition_variable_any.
class AdaptiveMutex {
 public:
  AdaptiveMutex() = default;
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() {
    if (__builtin_expect(state_.exchange(1, std::memory_order_acquire) == 0, 1)) return;
    lock_contended();
  }
  bool try_lock() {
    return state_.load(std::memory_order_relaxed) == 0 &&
           state_.exchange(1, std::memory_order_acquire) == 0;
  }
  void unlock() { state_.store(0, std::memory_order_release); }

 private:
  void lock_contended();

  std::atomic<uint32_t> state_{0};
};

}  // namespace vramshim::support
