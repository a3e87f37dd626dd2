// A program thread cancelled (pthread_cancel, deferred cancellation) while it runs inside the shim.
// At a cancellation point — a driver call that sleeps or waits, a condition variable's wait, a log
// line's write, libunwind reading a file — glibc unwinds the thread's stack. Through the shim's
// frames that unwinding would end the process (std::terminate at a noexcept frame; glibc's abort at
// a catch-all, which ends the unwinding) or stop the shim's work half-way (a fence waiter counted
// for ever, a charge never made, a block attributed to no one). So the shim holds cancellation back
// while it works: the thread is cancelled at its first cancellation point after the shim's part, as
// POSIX lets a cancellation act at any later cancellation point.
#pragma once

#include <pthread.h>

namespace vramshim::support {

// Holds back cancellation of the calling thread for the object's lifetime (asynchronous
// cancellation, which POSIX allows around no library call, is not provided for). Two atomic
// operations on the thread's descriptor (19 ns measured in all): for driver calls, waits and slow
// paths, not for the pool's hit path.
class DeferredCancellation {
 public:
  DeferredCancellation() noexcept { ::pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_); }
  ~DeferredCancellation() { ::pthread_setcancelstate(previous_, nullptr); }

  DeferredCancellation(const DeferredCancellation&) = delete;
  DeferredCancellation& operator=(const DeferredCancellation&) = delete;

 private:
  int previous_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace vramshim::support
