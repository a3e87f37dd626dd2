#include "analyzer/control/checked_socket_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vramshim::cli {

CheckedSocketFile::CheckedSocketFile(const SocketEntry& entry) {
  fd_ = ::open(entry.path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    gone_ = errno == ENOENT;
    problem_ = "cannot open " + entry.path + ": " + std::strerror(errno);
    return;
  }
  struct stat info;
  if (::fstat(fd_, &info) != 0) {
    problem_ = "cannot inspect " + entry.path + ": " + std::strerror(errno);
  } else if (!S_ISSOCK(info.st_mode) || info.st_dev != entry.device || info.st_ino != entry.inode) {
    replaced_ = true;
    problem_ = entry.path + " is no longer the socket that was checked; not trusted";
  }
}

CheckedSocketFile::~CheckedSocketFile() {
  if (fd_ >= 0) ::close(fd_);
}

int CheckedSocketFile::connect(int client) const {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "/proc/self/fd/%d", fd_);
  return ::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
}

}  // namespace vramshim::cli
