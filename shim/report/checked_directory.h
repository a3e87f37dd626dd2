// The directory a report is written into, resolved once into a descriptor that every later step
// (leftover sweep, create, rename, fsync) works relative to, so what was checked is what is used.
//
// A job writing into a shared directory must not be redirected by another user: each component is
// opened without following links (O_PATH | O_NOFOLLOW) from the descriptor of the previous one,
// and a symbolic link is read and followed (40 at most, as the kernel does) only when it belongs
// to root or to this process's effective uid, or, for a job not run by root, sits in a directory
// nobody else may write to. Links of one's own (/home -> /data/home, a scratch link) keep working;
// a link another user put in /tmp or a group-writable project directory is refused. The directory
// reached may be anyone's: the file is made in it through the descriptor, so nothing redirects it.
#pragma once

#include <string>

namespace vramshim::report {

// An O_PATH descriptor of `directory` (relative to the working directory unless absolute), or -1
// with *error saying why, e.g. "/tmp/reports: refused: a symbolic link of uid 1001".
int open_checked_directory(const std::string& directory, std::string* error);

}  // namespace vramshim::report
