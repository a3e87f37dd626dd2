// The pipe that wakes the control thread: a signal handler writes a byte, the thread polls the read
// end. A pipe rather than an eventfd: every eventfd is the same anonymous file, so an eventfd of
// the program's at the shim's old number could not be told from the shim's own.
#pragma once

#include "shim/support/owned_descriptor.h"

namespace vramshim::control {

struct WakePipe {
  support::OwnedDescriptor read_end;
  support::OwnedDescriptor write_end;

  // Closes both ends, each while it is still the shim's.
  void close() {
    read_end.close();
    write_end.close();
  }
};

// A new non-blocking, close-on-exec pipe at high numbers; false (nothing made) on failure.
bool create_wake_pipe(WakePipe* pipe);

// Makes the pipe readable, while `write_end` is still the shim's. Async-signal-safe; preserves
// errno.
void wake(const support::OwnedDescriptor& write_end);

// Empties the pipe after it became readable, while `read_end` is still the shim's.
void drain(const support::OwnedDescriptor& read_end);

}  // namespace vramshim::control
