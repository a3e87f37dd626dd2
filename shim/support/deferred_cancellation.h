// A program thread cancelled (pthread_cancel, deferred cancellation) while it runs inside the shim.
// At a cancellation point — a driver call that sleeps or waits, a condition variable's wait, a log
// line's write — glibc unwinds the thread's stack. Through the shim's frames that unwinding would
// end the process (std::terminate at a noexcept frame; glibc's abort at a catch-all that does not
// rethrow) or leave the pool half-updated (a fence claimed and never released: every allocation
// of the device waits for it). So the shim holds the cancellation back while it works: the thread
// is cancelled at its first cancellation point after the shim's part, as POSIX lets a cancellation
// act at any later cancellation point.
#pragma once

#include <pthread.h>

namespace vramshim::support {

// Holds back cancellation of the calling thread for the object's lifetime. Two atomic operations
// on the thread's descriptor (19 ns measured in all): for driver calls, waits and slow paths, not
// for the pool's hit path.
class DeferredCancellation {
 public:
  DeferredCancellation() noexcept { ::pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_); }
  // noexcept(false): a thread with asynchronous cancellation (which POSIX allows around no library
  // call) and a request pending is cancelled here, and its unwinding must leave this frame.
  ~DeferredCancellation() noexcept(false) { ::pthread_setcancelstate(previous_, nullptr); }

  DeferredCancellation(const DeferredCancellation&) = delete;
  DeferredCancellation& operator=(const DeferredCancellation&) = delete;

 private:
  int previous_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace vramshim::support
