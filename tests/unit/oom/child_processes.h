// Child processes for the tests of shim/oom: stats servers (stats_server.cc) serving control
// sockets, and the probe run under a chosen environment.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace vramshim::testing {

// The absolute path of a runfile ("tests/unit/oom/stats_server").
std::string runfile(const std::string& path);

// The pid of a process that has come and gone.
pid_t dead_pid();

// A private temporary directory, removed with everything in it at destruction.
class TemporaryDirectory {
 public:
  TemporaryDirectory();
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Children that are ended (SIGTERM) and reaped at destruction.
class ChildProcesses {
 public:
  ChildProcesses() = default;
  ~ChildProcesses();
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;

  // Starts `stats_server DIRECTORY/NAME.sock ARGUMENTS…` with argv[0] "stats_server", NAME its own
  // pid, or `named_pid` when given (an impostor); returns its pid once it says it is ready, or -1.
  pid_t start_stats_server(const std::string& directory, const std::vector<std::string>& arguments,
                           pid_t named_pid = 0);

 private:
  std::vector<pid_t> pids_;
};

// What a program printed and how it ended.
struct ProgramRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// The exit code of a run_program that could not create a PID namespace.
inline constexpr int kNoPidNamespace = 125;

// Runs `program ARGUMENTS…` to its end with the environment changed by `environment`: NAME=VALUE
// sets, NAME= removes; "%self%" in a value is the program's own pid as this process sees it. With
// `in_new_pid_namespace`, the program is pid 1 of a PID namespace of its own, like a container's.
ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                       const std::vector<std::pair<std::string, std::string>>& environment,
                       bool in_new_pid_namespace = false);

}  // namespace vramshim::testing
