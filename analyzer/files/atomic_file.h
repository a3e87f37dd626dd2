// Writing the files the CLI makes (an HTML page, a merged report) whole or not at all, without
// trusting anything already at their names or next to them: the CLI may run as root in a directory
// other users can write, such as /tmp.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace vramshim::analyzer {

// Has `write` fill a new file with an unpredictable name in `path`'s directory (created with
// O_EXCL | O_NOFOLLOW), flushes it to disk and renames it over `path`: a regular file or a link to
// one at `path` is replaced, never written through. A regular file replaced keeps its permission
// bits and, when we are root, its owner and group, from before anything is written; any other new
// file gets mode 0666 less the umask. A signal ending the process mid-write (SIGINT, SIGTERM,
// SIGHUP, any other but a crash's) removes the new file (RemovedIfKilled) and leaves `path` as it
// was. A terminal, a character
// device (/dev/null) or a pipe of root's or ours at `path` is written into as it is, and a name of
// this process's own descriptor (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N) is written
// into that descriptor; a link to anything but a file, a directory, a socket or a block device is
// refused. On failure, an exception from `write` included, the new file is removed and `path` is
// left as it was; throws std::runtime_error("PATH: …"), or rethrows what `write` threw.
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);

}  // namespace vramshim::analyzer
