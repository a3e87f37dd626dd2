#include "analyzer/files/regular_file.h"

#include <fcntl.h>
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
  if (::fstat(fd, info) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(info->st_mode)) {
    why = not_regular(*info);
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
