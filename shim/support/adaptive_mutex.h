// A mutex that spins briefly before it sleeps, for the locks the allocation path takes.
#pragma once

#include <pthread.h>

namespace vramshim::support {

// glibc's adaptive mutex: a thread that finds it held spins (a bounded number of tries, the
// glibc.pthread.mutex_spin_count tunable) before it waits in the kernel. The allocation path holds
// its locks for some tens of nanoseconds, so a waiter nearly always gets the lock while spinning,
// where std::mutex would put it to sleep in futex() and wake it microseconds later: with two
// threads allocating on one context this gave 1.4-1.7x the pairs per second and cut the CPU per
// pair by a quarter (bench/shim, BM_ShimPair/4096/real_time/threads:2). Uncontended it costs what
// std::mutex costs (one atomic exchange each way). An unbounded spin lock, tried before, burned the
// waiting CPU. Satisfies Lockable, for std::lock_guard, std::unique_lock and
// std::condition_variable_any.
class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mutex_, &attributes);
    pthread_mutexattr_destroy(&attributes);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mutex_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() { pthread_mutex_lock(&mutex_); }
  bool try_lock() { return pthread_mutex_trylock(&mutex_) == 0; }
  void unlock() { pthread_mutex_unlock(&mutex_); }

 private:
  pthread_mutex_t mutex_;
};

}  // namespace vramshim::support
