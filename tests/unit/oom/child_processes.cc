#include "tests/unit/oom/child_processes.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace vramshim::testing {

std::string runfile(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? resolved : path;
}

pid_t dead_pid() {
  const pid_t dead = ::fork();
  if (dead == 0) _exit(0);
  ::waitpid(dead, nullptr, 0);
  return dead;
}

TemporaryDirectory::TemporaryDirectory() {
  char pattern[] = "/tmp/vramshim-oom-test-XXXXXX";
  if (::mkdtemp(pattern) != nullptr) path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  if (!path_.empty()) std::system(("rm -rf " + path_).c_str());
}

ChildProcesses::~ChildProcesses() {
  for (const pid_t pid : pids_) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
}

pid_t ChildProcesses::start_stats_server(const std::string& directory,
                                         const std::vector<std::string>& arguments,
                                         pid_t named_pid) {
  const std::string server = runfile("tests/unit/oom/stats_server");
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(ready[1], 1);
    ::close(ready[0]);
    const pid_t name = named_pid != 0 ? named_pid : ::getpid();
    const std::string socket = directory + "/" + std::to_string(name) + ".sock";
    std::vector<char*> argv{const_cast<char*>("stats_server"), const_cast<char*>(socket.c_str())};
    for (const std::string& argument : arguments)
      argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    ::execv(server.c_str(), argv.data());
    _exit(121);
  }
  ::close(ready[1]);
  char line[64] = {};
  const ssize_t n = ::read(ready[0], line, sizeof(line) - 1);
  ::close(ready[0]);
  pids_.push_back(child);
  return n > 0 && std::string(line) == "ready\n" ? child : -1;
}

namespace {

// In the child of run_program: forks the program's process as pid 1 of a new PID namespace, waits
// for it and exits with its status; in that process, returns its pid as the caller's namespace
// knows it.
pid_t enter_new_pid_namespace() {
  int outer_pid[2];
  if (::unshare(CLONE_NEWPID) != 0 || ::pipe(outer_pid) != 0) _exit(kNoPidNamespace);
  const pid_t inner = ::fork();
  if (inner < 0) _exit(kNoPidNamespace);
  if (inner > 0) {
    ssize_t ignored = ::write(outer_pid[1], &inner, sizeof(inner));
    (void)ignored;
    int status = 0;
    ::waitpid(inner, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  pid_t self = 0;
  if (::read(outer_pid[0], &self, sizeof(self)) != sizeof(self)) _exit(kNoPidNamespace);
  return self;
}

}  // namespace

ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                       const std::vector<std::pair<std::string, std::string>>& environment,
                       bool in_new_pid_namespace) {
  int output[2];
  if (::pipe(output) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(output[1], 1);
    ::dup2(output[1], 2);
    ::close(output[0]);
    const pid_t self_pid = in_new_pid_namespace ? enter_new_pid_namespace() : ::getpid();
    const std::string self = std::to_string(self_pid);
    for (const auto& [name, value] : environment) {
      if (value.empty()) {
        ::unsetenv(name.c_str());
        continue;
      }
      std::string expanded = value;
      for (size_t at = expanded.find("%self%"); at != std::string::npos;
           at = expanded.find("%self%", at)) {
        expanded.replace(at, 6, self);
      }
      ::setenv(name.c_str(), expanded.c_str(), 1);
    }
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const std::string& argument : arguments)
      argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    _exit(121);
  }
  ::close(output[1]);
  ProgramRun run;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(output[0], buffer, sizeof(buffer))) > 0) run.output.append(buffer, n);
  ::close(output[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace vramshim::testing
