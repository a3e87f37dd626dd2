#include "shim/control/listening_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vramshim::control {
namespace {

bool make_address(const std::string& path, sockaddr_un* address) {
  std::memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address->sun_path)) return false;
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Whether a process listens on the socket file at `address`. Without waiting: a listener that
// accepts nothing (stopped, hung) with its queue full would hold a blocking connect, and with it
// every thread's first CUDA call, forever; EAGAIN says it is there all the same.
bool someone_listens(const sockaddr_un& address) {
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool listens =
      ::connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 ||
      errno == EAGAIN || errno == EINPROGRESS;
  ::close(probe);
  return listens;
}

// Sets mode 0600 on the socket file at `path` without following a link there: if whoever may
// write its directory put one at the name since the bind, the mode is not given to what it names.
bool restrict_to_owner(const std::string& path) {
  if (::fchmodat(AT_FDCWD, path.c_str(), 0600, AT_SYMLINK_NOFOLLOW) == 0) return true;
  if (errno != ENOTSUP && errno != EOPNOTSUPP) return false;
  // A C library without AT_SYMLINK_NOFOLLOW for fchmodat (glibc before 2.32), or a link there.
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode) &&
         ::chmod(path.c_str(), 0600) == 0;
}

// `path` made absolute against the working directory now; empty when that cannot be known.
std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char directory[4096];
  if (::getcwd(directory, sizeof(directory)) == nullptr) return {};
  return std::string(directory) + "/" + path;
}

}  // namespace

std::unique_ptr<ListeningSocket> ListeningSocket::open(const std::string& path,
                                                       std::string* error) {
  sockaddr_un address;
  if (!make_address(path, &address)) {
    *error = "socket path \"" + path + "\" is empty or longer than 107 bytes";
    return nullptr;
  }
  struct stat existing;
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      *error = path + " exists and is not a socket";
      return nullptr;
    }
    if (someone_listens(address)) {
      *error = path + " is in use by another process";
      return nullptr;
    }
    ::unlink(path.c_str());
  }

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("cannot create a socket: ") + std::strerror(errno);
    return nullptr;
  }
  // Bound under a staging name and renamed to `path` once it listens: a socket file at `path`
  // always accepts, so a CLI that connects between the bind and the listen (ps, the exporter) does
  // not take it for a dead process's and remove it. A path too long for the staging name is bound
  // where it is.
  const std::string staging = path + ".new";
  sockaddr_un staging_address;
  const bool staged = make_address(staging, &staging_address) &&
                      (::lstat(staging.c_str(), &existing) != 0 ||
                       (S_ISSOCK(existing.st_mode) && ::unlink(staging.c_str()) == 0));
  const std::string& bound_path = staged ? staging : path;
  // Linux sets a socket file's mode at bind time from the umask; the directory (0700 by default)
  // keeps others out until the chmod below.
  if (::bind(fd, reinterpret_cast<const sockaddr*>(staged ? &staging_address : &address),
             sizeof(address)) != 0) {
    *error = "cannot bind " + bound_path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  struct stat bound;
  if (!restrict_to_owner(bound_path) || ::listen(fd, 64) != 0 ||
      (staged && ::rename(staging.c_str(), path.c_str()) != 0) ||
      ::lstat(path.c_str(), &bound) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(bound_path.c_str());
    return nullptr;
  }
  support::OwnedDescriptor descriptor = support::OwnedDescriptor::adopt(fd);
  if (descriptor.empty()) {
    *error = "cannot keep the socket of " + path;
    ::unlink(path.c_str());
    return nullptr;
  }
  return std::unique_ptr<ListeningSocket>(
      new ListeningSocket(descriptor, path, absolute(path), bound.st_dev, bound.st_ino));
}

ListeningSocket::~ListeningSocket() {
  descriptor_.close();
  remove_file();
}

void ListeningSocket::remove_file() {
  if (absolute_path_.empty() || ::getpid() != owner_) return;
  struct stat current;
  if (::lstat(absolute_path_.c_str(), &current) == 0 && S_ISSOCK(current.st_mode) &&
      current.st_dev == device_ && current.st_ino == inode_) {
    ::unlink(absolute_path_.c_str());
  }
}

void ListeningSocket::abandon() {
  descriptor_.close();
  absolute_path_.clear();
}

}  // namespace vramshim::control
