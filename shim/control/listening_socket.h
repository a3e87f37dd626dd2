// The control socket's listening end: a Unix stream socket file of mode 0600, removed when closed.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace vramshim::control {

class ListeningSocket {
 public:
  // Binds and listens at `path` (non-blocking, close-on-exec, mode 0600). A socket file already
  // there that nobody answers on (left by a dead process) is replaced; a live socket or any other
  // file is left alone and refused. On failure returns null and sets *error.
  static std::unique_ptr<ListeningSocket> open(const std::string& path, std::string* error);

  // Closes the socket and removes its file (only in the process that created it).
  ~ListeningSocket();
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // For a forked child: closes the inherited descriptor and forgets the file, which stays the
  // parent's.
  void abandon();

 private:
  ListeningSocket(int fd, std::string path, pid_t owner)
      : fd_(fd), path_(std::move(path)), owner_(owner) {}

  int fd_;
  std::string path_;
  pid_t owner_;
};

}  // namespace vramshim::control
