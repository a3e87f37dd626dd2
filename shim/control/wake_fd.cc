#include "shim/control/wake_fd.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace vramshim::control {

int create_wake_fd() { return ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void wake(int wake_fd) {
  const int saved_errno = errno;
  const std::uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves the fd readable, which is all a wake-up needs.
  ssize_t ignored = ::write(wake_fd, &one, sizeof(one));
  (void)ignored;
  errno = saved_errno;
}

void drain_wake_fd(int wake_fd) {
  std::uint64_t count;
  ssize_t ignored = ::read(wake_fd, &count, sizeof(count));
  (void)ignored;
}

}  // namespace vramshim::control
