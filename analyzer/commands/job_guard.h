// Ends the whole process group of `vramshim run`'s command when run dies, SIGKILL included:
// PR_SET_PDEATHSIG ends only the command's own process, and would leave what it started running.
#pragma once

#include <sys/types.h>

namespace vramshim::cli {

// A process of ours that joins process group `group` and kills it with SIGKILL once we are gone:
// it waits on a pipe only we can write to, whose end reaches it when we die. It ignores every
// signal it can, so what the group is sent (passed on, Ctrl-C, Ctrl-Z) leaves it in place.
class JobGuard {
 public:
  explicit JobGuard(pid_t group);  // no guard when the group is gone already, or on failure
  ~JobGuard() { release(); }
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  // The command has ended while we live: the guard ends, the group left as it is.
  void release();

 private:
  pid_t guard_ = -1;
  int alive_ = -1;  // the pipe's write end, ours alone
};

}  // namespace vramshim::cli
