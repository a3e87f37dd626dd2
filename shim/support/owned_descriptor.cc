#include "shim/support/owned_descriptor.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace vramshim::support {
namespace {

// The lowest number the shim moves its descriptors to: a little under the soft limit of open
// files, and no higher than 1024 - 64 (a higher number grows the kernel's descriptor table, which
// a limit of a million would make 8 MB). 0: leave descriptors where they are.
int high_descriptor_floor() {
  constexpr rlim_t kCeiling = 1024;
  constexpr rlim_t kRoom = 64;  // the shim's own few, and room for the program's last opens
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const rlim_t top = std::min(limit.rlim_cur, kCeiling);
  return top > 2 * kRoom ? static_cast<int>(top - kRoom) : 0;
}

}  // namespace

OwnedDescriptor OwnedDescriptor::adopt(int fd) {
  if (fd < 0) return {};
  // Known by its file before it moves: a program closing numbers it did not open (at its start,
  // beside the control thread's) may put a file of its own at this one meanwhile, which must then
  // be neither taken for ours nor closed.
  OwnedDescriptor created = recognize(fd);
  if (created.empty()) {
    ::close(fd);
    return {};
  }
  const int floor = high_descriptor_floor();
  if (floor <= fd) return created;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, floor);
  if (moved < 0) return created;
  OwnedDescriptor adopted = recognize(moved);
  if (adopted.device_ != created.device_ || adopted.inode_ != created.inode_) {
    ::close(moved);  // a copy of the program's file: ours is gone
    return {};
  }
  created.close();  // if it is still ours
  return adopted;
}

OwnedDescriptor OwnedDescriptor::recognize(int fd) {
  struct stat info;
  if (fd < 0 || ::fstat(fd, &info) != 0) return {};
  return OwnedDescriptor(fd, info.st_dev, info.st_ino);
}

bool OwnedDescriptor::still_ours() const {
  struct stat info;
  return fd_ >= 0 && ::fstat(fd_, &info) == 0 && info.st_dev == device_ && info.st_ino == inode_;
}

void OwnedDescriptor::close() {
  if (still_ours()) ::close(fd_);
  fd_ = -1;
}

}  // namespace vramshim::support
