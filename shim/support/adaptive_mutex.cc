#include "shim/support/adaptive_mutex.h"

#include <time.h>

#include <algorithm>

#include "shim/support/deferred_cancellation.h"

namespace vramshim::support {
namespace {

// Looks at the word this many times (a pause between looks) before the first nap: some
// microseconds, several times the longest pool-hit critical section.
constexpr int kSpinLooks = 1000;
constexpr long kFirstNapNs = 50'000;
constexpr long kLongestNapNs = 1'000'000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void AdaptiveMutex::lock_contended() {
  long nap_ns = kFirstNapNs;
  for (;;) {
    for (int look = 0; look < kSpinLooks; ++look) {
      if (try_lock()) return;
      cpu_relax();
    }
    const timespec nap{0, nap_ns};
    {
      // nanosleep is a cancellation point, and the lock is taken in the middle of the shim's work.
      const DeferredCancellation deferred;
      nanosleep(&nap, nullptr);  // woken early by a signal: looks again all the same
    }
    nap_ns = std::min(nap_ns * 2, kLongestNapNs);
  }
}

}  // namespace vramshim::support
