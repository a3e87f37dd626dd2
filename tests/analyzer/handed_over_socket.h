// A control socket whose listener handed it over and exited, as a co-tenant forges one: a child
// binds DIRECTORY/CHILD.sock, listens and exits at once, and its parent serves the socket from then
// on. SO_PEERCRED still names the child (the process that called listen()), whose pid the kernel
// may give to any other process, of any user.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>

namespace vramshim::testing {

class HandedOverSocket {
 public:
  // Serves DIRECTORY/CHILD.sock as `uid` (root only for another uid than ours), answering every
  // request with `answer` and a newline; returns once the child is gone and reaped.
  HandedOverSocket(const std::string& directory, const std::string& answer,
                   uid_t uid = ::geteuid());
  ~HandedOverSocket();  // kills the server and the process given the listener's pid, if any
  HandedOverSocket(const HandedOverSocket&) = delete;
  HandedOverSocket& operator=(const HandedOverSocket&) = delete;

  pid_t listener() const { return listener_; }  // the child's pid: the socket's name
  const std::string& path() const { return path_; }

  // Starts a process of `uid` that gets the listener's pid (clone3 with set_tid, as the kernel may
  // hand the pid out again); false when this process may not choose a pid (not root).
  bool give_the_pid_to(uid_t uid);

 private:
  pid_t server_ = -1;
  pid_t listener_ = -1;
  pid_t heir_ = -1;  // the process given the listener's pid
  std::string path_;
};

}  // namespace vramshim::testing
