#include "analyzer/commands/job_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace vramshim::cli {

JobGuard::JobGuard(pid_t group) {
  int alive[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) return;
  // Every signal held across the fork: the guard must never run our handlers, which would pass a
  // signal for our group on to the command's a second time.
  sigset_t all, previous;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t guard = ::fork();
  if (guard == 0) {
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      ::signal(signal_number, SIG_IGN);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::close(alive[1]);
    if (::setpgid(0, group) != 0) _exit(0);  // the group is gone: nothing left to end
    char byte;
    while (::read(alive[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::kill(0, SIGKILL);  // the group, the guard with it
    _exit(0);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::close(alive[0]);
  if (guard < 0) {
    ::close(alive[1]);
    return;
  }
  guard_ = guard;
  alive_ = alive[1];
}

void JobGuard::release() {
  if (guard_ < 0) return;
  // Gone before the pipe's end closes, which would set it off.
  ::kill(guard_, SIGKILL);
  while (::waitpid(guard_, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(alive_);
  guard_ = -1;
}

}  // namespace vramshim::cli
