// Opening what the analyzer reads — a report, a binary a report names — only if it is a regular
// file. A FIFO would block the open or the reads for ever; a device may never end (/dev/zero) or do
// something on being opened; so may a kernel interface that looks like a regular file (procfs,
// sysfs, …: /proc/kmsg blocks, /proc/self/pagemap never ends), reached through a link another
// user planted among the reports.
#pragma once

#include <sys/stat.h>

#include <string>

namespace vramshim::analyzer {

// A read-only, close-on-exec descriptor of `path` (links followed) if it is a regular file, with
// its status in *info. Otherwise -1 with *error saying why, e.g. "No such file or directory" or
// "is a FIFO, not a regular file", and errno ENOENT if there is no such file. Never blocks.
int open_regular_file(const std::string& path, struct stat* info, std::string* error);

}  // namespace vramshim::analyzer
