// Writing the files the CLI makes (an HTML page, a merged report) whole or not at all, without
// trusting anything already at their names or next to them: the CLI may run as root in a directory
// other users can write, such as /tmp.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace vramshim::analyzer {

// Has `write` fill a new file with an unpredictable name in `path`'s directory (created with
// O_EXCL | O_NOFOLLOW, mode 0666 less the umask), flushes it to disk and renames it over `path`:
// whatever was at `path`, a link included, is replaced, never written through. On failure, an
// exception from `write` included, the new file is removed and `path` is left as it was; throws
// std::runtime_error("PATH: …"), or rethrows what `write` threw.
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);

}  // namespace vramshim::analyzer
