// An eventfd that wakes the control thread; write() on it is async-signal-safe.
#pragma once

namespace vramshim::control {

// Creates a non-blocking, close-on-exec eventfd; -1 on failure.
int create_wake_fd();

// Makes the fd readable. Async-signal-safe; preserves errno.
void wake(int wake_fd);

// Empties the fd after it became readable.
void drain_wake_fd(int wake_fd);

}  // namespace vramshim::control
