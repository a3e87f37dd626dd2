#include "shim/support/write_without_sigpipe.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace vramshim::support {

ssize_t write_without_sigpipe(int fd, const void* data, size_t size) {
  sigset_t sigpipe;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  sigset_t pending;
  const bool pending_before = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  sigset_t previous;
  const bool blocked = pthread_sigmask(SIG_BLOCK, &sigpipe, &previous) == 0;
  ssize_t result;
  do {
    result = ::write(fd, data, size);
  } while (result < 0 && errno == EINTR);
  const int error = errno;
  if (blocked) {
    if (result < 0 && error == EPIPE && !pending_before) {
      // The write's SIGPIPE is pending for this thread: take it before unblocking.
      const timespec now = {0, 0};
      while (sigtimedwait(&sigpipe, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  errno = error;
  return result;
}

}  // namespace vramshim::support
