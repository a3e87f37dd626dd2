#include "shim/support/owned_descriptor.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace vramshim::support {
namespace {

// Where the shim moves its descriptors: numbers from a little under the soft limit of open files,
// and below 1024 (a higher number grows the kernel's descriptor table, which a limit of a million
// would make 8 MB). An empty range: leave descriptors where they are.
struct HighRange {
  int floor = 0;
  int ceiling = 0;  // past the last number
};
HighRange high_descriptor_range() {
  constexpr rlim_t kCeiling = 1024;
  constexpr rlim_t kRoom = 64;  // the shim's own few, and room for the program's last opens
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  const rlim_t top = std::min(limit.rlim_cur, kCeiling);
  if (top <= 2 * kRoom) return {};
  return {static_cast<int>(top - kRoom), static_cast<int>(top)};
}

// The numbers below 1024 the shim took and did not close itself: those it holds, and those the
// program closed behind its back. A program that closed the shim's numbers may put files of its own
// there at any moment (one that puts its descriptors back where they were, with dup2), so a new
// descriptor of the shim's never goes to one of them while the range has another: else a file the
// program dup2'ed there would take the shim's place between the shim's checks, and the shim could
// write a wake-up byte into it. Atomics: marked from a signal handler's check too.
class TakenNumbers {
 public:
  void mark(int fd) {
    if (fd >= 0 && fd < kNumbers) words_[fd / 64].fetch_or(bit(fd), std::memory_order_relaxed);
  }
  void unmark(int fd) {
    if (fd >= 0 && fd < kNumbers) words_[fd / 64].fetch_and(~bit(fd), std::memory_order_relaxed);
  }
  bool marked(int fd) const {
    return fd >= 0 && fd < kNumbers &&
           (words_[fd / 64].load(std::memory_order_relaxed) & bit(fd)) != 0;
  }

 private:
  static constexpr int kNumbers = 1024;
  static uint64_t bit(int fd) { return uint64_t{1} << (fd % 64); }
  std::atomic<uint64_t> words_[kNumbers / 64] = {};
};
TakenNumbers g_taken;

// A copy of `fd` at the lowest free number of `range` the shim never took without giving it back,
// or at the lowest free one once every free number there was taken; -1 when none is free.
int duplicate_into(int fd, HighRange range) {
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, range.floor);
  while (moved >= 0 && g_taken.marked(moved) && moved + 1 < range.ceiling) {
    const int next = ::fcntl(fd, F_DUPFD_CLOEXEC, moved + 1);
    if (next < 0 || next >= range.ceiling) {
      if (next >= 0) ::close(next);
      break;
    }
    ::close(moved);
    moved = next;
  }
  return moved;
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
  const HighRange range = high_descriptor_range();
  if (range.floor <= fd) return created;
  const int moved = duplicate_into(fd, range);
  if (moved < 0) return created;
  OwnedDescriptor adopted = recognize(moved);
  if (adopted.device_ != created.device_ || adopted.inode_ != created.inode_) {
    g_taken.unmark(moved);  // before the close: another thread's adopt may take the number next
    ::close(moved);         // a copy of the program's file: ours is gone
    return {};
  }
  created.close();  // if it is still ours
  return adopted;
}

OwnedDescriptor OwnedDescriptor::recognize(int fd) {
  struct stat info;
  if (fd < 0 || ::fstat(fd, &info) != 0) return {};
  g_taken.mark(fd);
  return OwnedDescriptor(fd, info.st_dev, info.st_ino);
}

bool OwnedDescriptor::still_ours() const {
  struct stat info;
  return fd_ >= 0 && ::fstat(fd_, &info) == 0 && info.st_dev == device_ && info.st_ino == inode_;
}

void OwnedDescriptor::close() {
  if (still_ours()) {
    g_taken.unmark(fd_);  // before the close: another thread's adopt may take the number next
    ::close(fd_);
  }
  fd_ = -1;
}

}  // namespace vramshim::support
