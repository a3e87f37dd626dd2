#include "tests/analyzer/handed_over_socket.h"

#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace vramshim::testing {
namespace {

// Reads one value of type T from `fd`; false at the end of the stream.
template <typename T>
bool read_value(int fd, T* value) {
  ssize_t got;
  while ((got = ::read(fd, value, sizeof(T))) < 0 && errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof(T));
}

[[noreturn]] void serve(const std::string& directory, const std::string& answer, uid_t uid,
                        int ready) {
  if (uid != ::geteuid() && (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
                             ::setresuid(uid, uid, uid) != 0)) {
    _exit(120);
  }
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const pid_t child = ::fork();
  if (child == 0) {
    sockaddr_un address = {};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s/%d.sock", directory.c_str(),
                  ::getpid());
    const bool listening =
        ::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
        ::listen(listener, 8) == 0;
    _exit(listening ? 0 : 121);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0 || ::write(ready, &child, sizeof(child)) != sizeof(child)) {
    _exit(122);
  }
  const std::string line = answer + "\n";
  for (;;) {
    const int client = ::accept(listener, nullptr, nullptr);
    if (client < 0) continue;
    char request[4096];
    if (::read(client, request, sizeof(request)) > 0) {
      ssize_t ignored = ::send(client, line.data(), line.size(), MSG_NOSIGNAL);
      (void)ignored;
    }
    ::close(client);
  }
}

}  // namespace

HandedOverSocket::HandedOverSocket(const std::string& directory, const std::string& answer,
                                   uid_t uid) {
  int ready[2];
  if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  server_ = ::fork();
  if (server_ == 0) {
    ::close(ready[0]);
    serve(directory, answer, uid, ready[1]);
  }
  ::close(ready[1]);
  const bool served = server_ > 0 && read_value(ready[0], &listener_);
  ::close(ready[0]);
  if (!served) throw std::runtime_error("the handed-over socket is not served");
  path_ = directory + "/" + std::to_string(listener_) + ".sock";
}

HandedOverSocket::~HandedOverSocket() {
  for (const pid_t pid : {server_, heir_}) {
    if (pid <= 0) continue;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

bool HandedOverSocket::give_the_pid_to(uid_t uid) {
  int ready[2];
  if (::pipe(ready) != 0) return false;
  pid_t wanted = listener_;
  clone_args arguments = {};
  arguments.exit_signal = SIGCHLD;
  arguments.set_tid = reinterpret_cast<std::uintptr_t>(&wanted);
  arguments.set_tid_size = 1;
  const long heir = ::syscall(SYS_clone3, &arguments, sizeof(arguments));
  if (heir == 0) {
    // The C library does not know of this child: system calls only.
    const bool changed = ::syscall(SYS_setgroups, 0, nullptr) == 0 &&
                         ::syscall(SYS_setresgid, uid, uid, uid) == 0 &&
                         ::syscall(SYS_setresuid, uid, uid, uid) == 0;
    if (!changed || ::syscall(SYS_write, ready[1], "r", 1) != 1) ::syscall(SYS_exit_group, 123);
    for (;;) ::syscall(SYS_pause);
  }
  ::close(ready[1]);
  char byte = 0;
  const bool running = heir > 0 && read_value(ready[0], &byte);
  ::close(ready[0]);
  if (heir > 0) heir_ = static_cast<pid_t>(heir);
  return running;
}

}  // namespace vramshim::testing
