// The socket file of a SocketEntry, opened so that a connection reaches the very file that was
// checked when its directory was listed. Whoever may write the directory (its owner, when root
// lists another user's) may put anything at the name between that check and the connection — a
// link to any socket on the host — or a link in place of the directory itself, and connect() of a
// path follows them all. So the name is opened without following a link (O_PATH | O_NOFOLLOW), the
// descriptor must be a socket with the device and inode that were checked, and the connection goes
// through /proc/self/fd/N, which reaches that inode whatever its names lead to by then.
#pragma once

#include <string>

#include "analyzer/control/socket_directory.h"

namespace vramshim::cli {

class CheckedSocketFile {
 public:
  explicit CheckedSocketFile(const SocketEntry& entry);
  ~CheckedSocketFile();
  CheckedSocketFile(const CheckedSocketFile&) = delete;
  CheckedSocketFile& operator=(const CheckedSocketFile&) = delete;

  // Why it may not be connected to: "cannot open PATH: …" (gone() when nothing is at the name any
  // more), or "PATH is no longer the socket that was checked; not trusted" (replaced()); empty when
  // it may.
  const std::string& problem() const { return problem_; }
  bool gone() const { return gone_; }
  bool replaced() const { return replaced_; }

  // Connects `client`, a Unix stream socket, to it (only when problem() is empty): connect()'s
  // result, with its errno (ECONNREFUSED: nobody listens on it; EAGAIN: its backlog is full).
  int connect(int client) const;

 private:
  int fd_ = -1;
  bool gone_ = false;
  bool replaced_ = false;
  std::string problem_;
};

}  // namespace vramshim::cli
