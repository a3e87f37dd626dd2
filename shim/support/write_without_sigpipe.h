// write(2) for the shim's own lines (warnings on stderr, report notices): a pipe whose reader is
// gone must not end the program with SIGPIPE, as it would when the shim writes from a program
// thread that leaves SIGPIPE at its default action (`train.py 2>&1 | tee log`, tee killed: the job
// died at its first CUDA call, or at exit with its buffered output lost). Async-signal-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace vramshim::support {

// write(fd, data, size) with SIGPIPE blocked in the calling thread; a SIGPIPE the write raised is
// taken back (one pending before is left for the program). Returns what write returned, errno
// EPIPE where the reader is gone.
ssize_t write_without_sigpipe(int fd, const void* data, size_t size);

}  // namespace vramshim::support
