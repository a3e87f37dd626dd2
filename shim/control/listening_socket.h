// The control socket's listening end: a Unix stream socket file of mode 0600, removed when closed.
// A relative path is resolved against the working directory once, when the socket is made, and at
// close the file is removed only if it is still the socket this process bound (same inode): the
// program may have changed directory, or replaced the file, since.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "shim/support/owned_descriptor.h"

namespace vramshim::control {

class ListeningSocket {
 public:
  // Binds and listens at `path` (non-blocking, close-on-exec, mode 0600). A socket file already
  // there that nobody answers on (left by a dead process) is replaced; a live socket or any other
  // file is left alone and refused. On failure returns null and sets *error.
  static std::unique_ptr<ListeningSocket> open(const std::string& path, std::string* error);

  // Closes the socket (while its descriptor is still the socket's) and removes its file (only in
  // the process that created it).
  ~ListeningSocket();
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  int fd() const { return descriptor_.fd(); }
  // Whether its descriptor is still the socket (the program may have closed it and reused the
  // number).
  bool still_ours() const { return descriptor_.still_ours(); }
  // The path as given; absolute_path() is where it was bound.
  const std::string& path() const { return path_; }
  const std::string& absolute_path() const { return absolute_path_; }

  // Removes the socket file if it is still the one this process bound (only in that process).
  void remove_file();

  // For a forked child: closes the inherited descriptor and forgets the file, which stays the
  // parent's.
  void abandon();

 private:
  ListeningSocket(support::OwnedDescriptor descriptor, std::string path, std::string absolute_path,
                  dev_t device, ino_t inode)
      : descriptor_(descriptor),
        path_(std::move(path)),
        absolute_path_(std::move(absolute_path)),
        device_(device),
        inode_(inode),
        owner_(::getpid()) {}

  support::OwnedDescriptor descriptor_;
  std::string path_;
  std::string absolute_path_;
  dev_t device_;
  ino_t inode_;
  pid_t owner_;
};

}  // namespace vramshim::control
