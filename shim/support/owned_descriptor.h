// A descriptor the shim opened and keeps, known by the file it names. The program may close any
// descriptor number (os.closerange, close_range, dup2 over it, a second close of a stale number)
// and get it back from its next open: the shim then reads, writes, polls and closes a number only
// while it still names the file the shim opened there, so it never touches the program's file.
#pragma once

#include <sys/types.h>

namespace vramshim::support {

class OwnedDescriptor {
 public:
  OwnedDescriptor() = default;
  // Takes `fd`, just opened by the shim (close-on-exec), moved to a high number when one is free
  // (out of the way of the program's opens, which take the lowest free number), and not to a
  // number the shim took before and did not close itself while another is free (the program closed
  // it and may put a file there); -1 gives an empty one. A descriptor whose file cannot be read
  // (fstat) is closed: empty.
  static OwnedDescriptor adopt(int fd);
  // Takes `fd` where it is: a descriptor a library the shim loaded opened for itself. Empty when
  // `fd` is not open.
  static OwnedDescriptor recognize(int fd);

  int fd() const { return fd_; }
  bool empty() const { return fd_ < 0; }
  // Whether its number still names the file it was opened as. Async-signal-safe.
  bool still_ours() const;
  // Closes it when its number is still ours; forgets it either way.
  void close();
  // Forgets it without closing (the number is the program's now, or a forked child's to keep).
  void forget() { fd_ = -1; }

 private:
  OwnedDescriptor(int fd, dev_t device, ino_t inode) : fd_(fd), device_(device), inode_(inode) {}

  int fd_ = -1;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

}  // namespace vramshim::support
