#include "analyzer/files/regular_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace vramshim::analyzer {
namespace {

std::string not_regular(const struct stat& info) {
  if (S_ISDIR(info.st_mode)) return "is a directory";
  if (S_ISFIFO(info.st_mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(info.st_mode)) return "is a character device, not a regular file";
  if (S_ISBLK(info.st_mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(info.st_mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

// The kernel's interfaces that show their files as regular ones, with a size of 0 or a made-up one:
// a read may block for ever (/proc/kmsg, and it consumes the kernel's log), never end
// (/proc/self/pagemap) or act. Nothing the analyzer reads lives there.
const char* kernel_interface(const struct statfs& filesystem) {
  switch (filesystem.f_type) {
    case PROC_SUPER_MAGIC:
      return "procfs";
    case SYSFS_MAGIC:
      return "sysfs";
    case DEBUGFS_MAGIC:
      return "debugfs";
    case TRACEFS_MAGIC:
      return "tracefs";
    case SECURITYFS_MAGIC:
      return "securityfs";
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return "cgroupfs";
    case BPF_FS_MAGIC:
      return "bpffs";
    case EFIVARFS_MAGIC:
      return "efivarfs";
    default:
      return nullptr;
  }
}

// -1 with *error `why` and errno `saved`.
int failure(std::string why, int saved, std::string* error) {
  *error = std::move(why);
  errno = saved;
  return -1;
}

// -1 with errno as the failed call left it, and its text in *error.
int system_failure(std::string* error) {
  const int saved = errno;
  return failure(std::strerror(saved), saved, error);
}

}  // namespace

int open_regular_file(const std::string& path, struct stat* info, std::string* error) {
  // Looked at before it is opened: opening a device can act (a watchdog arms, a tape rewinds).
  if (::stat(path.c_str(), info) != 0) return system_failure(error);
  if (!S_ISREG(info->st_mode)) return failure(not_regular(*info), 0, error);
  // Should the path have been swapped for a FIFO since, O_NONBLOCK keeps the open from waiting for
  // a writer, and the descriptor's own status is what counts.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return system_failure(error);
  std::string why;
  // A file system that cannot say what it is (a FUSE daemon failing statfs) is no kernel's.
  struct statfs filesystem = {};
  if (::fstat(fd, info) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(info->st_mode)) {
    why = not_regular(*info);
  } else if (const char* interface =
                 ::fstatfs(fd, &filesystem) == 0 ? kernel_interface(filesystem) : nullptr) {
    why = std::string("is a file of the kernel's ") + interface + ", not a regular file";
  }
  if (!why.empty()) {
    ::close(fd);
    return failure(why, 0, error);
  }
  // A regular file's reads never block anyway; the readers (libdw among them) get the usual mode.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace vramshim::analyzer
