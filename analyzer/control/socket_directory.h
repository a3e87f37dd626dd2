// A directory of control sockets as the CLI sees it: trusted only if it passes the shim's own rule
// (control::verify_private_directory) for the uid whose sockets it holds — this process's effective
// uid, or another user's for root — so that no other user can have put, replaced or removed
// anything in it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace vramshim::cli {

// A control socket found in a socket directory, named PID.sock, of the directory's owner.
struct SocketEntry {
  pid_t pid;
  std::string path;
  uid_t owner = ::geteuid();  // the uid the process serving it must run as
  // The socket file that was checked: only it is connected to (CheckedSocketFile).
  dev_t device = 0;
  ino_t inode = 0;
};

class SocketDirectory {
 public:
  // Opens `path` without following a link and checks it for `owner`. Either it is trusted, or
  // missing(), or problem() says why it is not trusted.
  explicit SocketDirectory(std::string path, uid_t owner = ::geteuid());
  ~SocketDirectory();
  SocketDirectory(const SocketDirectory&) = delete;
  SocketDirectory& operator=(const SocketDirectory&) = delete;

  bool trusted() const { return fd_ >= 0; }
  bool missing() const { return missing_; }
  const std::string& problem() const { return problem_; }

  // No user runs this many processes under the shim on one machine; a directory may hold many
  // more names (stale sockets, files made to look like them), which would only cost every
  // listing time and memory.
  static constexpr size_t kMaxListed = 4096;

  // The trusted sockets named PID.sock in it (a socket, not a link, owned by the owner).
  // Each other PID.sock adds one line to *refused saying why it is not used. At most `max_listed`
  // names PID.sock are looked at; if there are more, one line of *refused says so and *cut (if
  // given) is set.
  std::vector<SocketEntry> sockets(std::vector<std::string>* refused,
                                   size_t max_listed = kMaxListed, bool* cut = nullptr) const;

  // PID.sock for `pid` if it is there and trusted; nullopt if it is not there, or (with *refused
  // set to why) if it is not trusted.
  std::optional<SocketEntry> socket_of(pid_t pid, std::string* refused) const;

  // Removes a socket that sockets() or socket_of() returned if its name still is that socket (the
  // same device and inode); whether it did. The directory is trusted: only its owner and root can
  // change its names, so a name its owner swaps between that check and the unlink (root removing
  // another user's stale socket) is one of the owner's own, in this directory (unlinkat follows no
  // link): nothing of anyone else's is removed.
  bool remove(const SocketEntry& entry) const;

 private:
  std::string path_;
  uid_t owner_;
  int fd_ = -1;
  bool missing_ = false;
  std::string problem_;
};

}  // namespace vramshim::cli
