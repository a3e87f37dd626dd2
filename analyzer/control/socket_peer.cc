#include "analyzer/control/socket_peer.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

// <asm-generic/socket.h> since Linux 6.5; the C library's headers may lack it.
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

namespace vramshim::cli {
namespace {

// The effective uid process `pid` runs as (/proc/PID/status), or nullopt with errno set (ENOENT:
// no such process).
std::optional<uid_t> effective_uid(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  if (!status) return std::nullopt;
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, 4, "Uid:") != 0) continue;
    std::istringstream uids(line.substr(4));  // real, effective, saved, filesystem
    unsigned long real = 0;
    unsigned long effective = 0;
    if (uids >> real >> effective) return static_cast<uid_t>(effective);
  }
  errno = EIO;
  return std::nullopt;
}

// Whether the process of `pidfd` has exited (a zombie too: it serves nothing).
bool exited(int pidfd) {
  pollfd process{pidfd, POLLIN, 0};
  return ::poll(&process, 1, 0) > 0;
}

}  // namespace

std::string peer_problem(int fd, const SocketEntry& socket) {
  ucred peer = {};
  socklen_t length = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
    return "cannot read the credentials of the process serving " + socket.path + ": " +
           std::strerror(errno);
  }
  const std::string pid = std::to_string(socket.pid);
  if (peer.pid != socket.pid || peer.uid != socket.owner) {
    return socket.path + " is served by pid " + std::to_string(peer.pid) + " of uid " +
           std::to_string(peer.uid) + ", not by pid " + pid + " of uid " +
           std::to_string(socket.owner) + "; not trusted";
  }
  // The pid and uid are those of listen()'s caller, kept after it exits: a co-tenant's child may
  // listen and exit, its parent serve on, and the pid go to another user's process. The pidfd
  // holds the listener itself: while it lives, its pid is no other process's, so the status read
  // before it is found alive is the listener's. Without SO_PEERPIDFD (Linux before 6.5) only the
  // uid is checked: a process that took over the pid passes only if it runs as the socket's
  // owner, who could answer anything for it anyway.
  const std::string exited_listener = socket.path + ": pid " + pid +
                                      ", which listened on it, has exited (another process serves "
                                      "it); not trusted";
  int pidfd = -1;
  length = sizeof(pidfd);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) != 0) {
    // Linux 6.5 to 6.15 have no pidfd for a listener that exited and was reaped.
    if (errno == ESRCH || errno == EINVAL) return exited_listener;
    if (errno != ENOPROTOOPT) {
      return "cannot identify the process serving " + socket.path + ": " + std::strerror(errno);
    }
    pidfd = -1;
  }
  const std::optional<uid_t> uid = effective_uid(socket.pid);
  const int uid_error = errno;
  const bool gone = pidfd >= 0 ? exited(pidfd) : !uid && uid_error == ENOENT;
  if (pidfd >= 0) ::close(pidfd);
  if (gone) return exited_listener;
  if (!uid) return "cannot read the uid of pid " + pid + ": " + std::strerror(uid_error);
  if (*uid != socket.owner) {
    return socket.path + ": pid " + pid + " runs as uid " + std::to_string(*uid) + ", not " +
           std::to_string(socket.owner) + "; not trusted";
  }
  return {};
}

}  // namespace vramshim::cli
