#include "shim/control/wake_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace vramshim::control {

bool create_wake_pipe(WakePipe* pipe) {
  int ends[2];
  if (::pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  pipe->read_end = support::OwnedDescriptor::adopt(ends[0]);
  pipe->write_end = support::OwnedDescriptor::adopt(ends[1]);
  if (pipe->read_end.empty() || pipe->write_end.empty()) {
    pipe->close();
    return false;
  }
  return true;
}

void wake(const support::OwnedDescriptor& write_end) {
  const int saved_errno = errno;
  if (write_end.still_ours()) {
    const char one = 1;
    // EAGAIN (the pipe is full) still leaves it readable, which is all a wake-up needs.
    ssize_t ignored = ::write(write_end.fd(), &one, sizeof(one));
    (void)ignored;
  }
  errno = saved_errno;
}

void drain(const support::OwnedDescriptor& read_end) {
  if (!read_end.still_ours()) return;
  char bytes[64];
  while (::read(read_end.fd(), bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes))) {
  }
}

}  // namespace vramshim::control
