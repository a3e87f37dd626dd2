// Runs a program as a child process, optionally with the shim preloaded and the simulated driver on
// the library path, and captures its exit status, stdout and stderr.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vramshim::testing {

struct ProgramRun {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // the signal that killed it, or 0
  bool core_dumped = false;
  std::string out;
  std::string err;
};

struct RunOptions {
  bool preload_shim = true;
  bool fake_driver = true;                 // tests/fakecuda first on LD_LIBRARY_PATH
  std::map<std::string, std::string> env;  // added to (or replacing in) the test's environment
  int timeout_seconds = 60;                // then SIGKILL
  std::string working_directory;           // empty: the test's
  // Raises the soft core-file size limit to the hard one, so a fatal signal can dump core (where
  // /proc/sys/kernel/core_pattern puts it: with a plain name, in the working directory).
  bool core_dumps = false;
};

// A fresh private directory with a short path (Unix socket paths are limited to 107 bytes),
// removed with its contents when the test program ends.
std::string short_temp_dir();

// Absolute path of a file in this test's runfiles, e.g. "shim/libvramshim.so".
std::string runfile(const std::string& workspace_relative);

// Absolute path of the test program tests/integration/programs/NAME.
std::string program(const std::string& name);

// Options under which the shim writes its report to `pattern` (VRAMSHIM_REPORT) and opens no
// control socket.
RunOptions reporting_to(const std::string& pattern);

ProgramRun run_program(const std::vector<std::string>& argv, const RunOptions& options = {});

// A program started in the background (stdout and stderr to /dev/null); killed with SIGKILL and
// reaped when it goes out of scope, if still running.
class BackgroundProgram {
 public:
  BackgroundProgram(const std::vector<std::string>& argv, const RunOptions& options);
  ~BackgroundProgram();
  BackgroundProgram(const BackgroundProgram&) = delete;
  BackgroundProgram& operator=(const BackgroundProgram&) = delete;
  int pid() const { return pid_; }
  // Sends `signal` and waits for the exit; returns the wait status.
  int stop(int signal);

 private:
  int pid_;
  bool reaped_ = false;
};

// Parses "vramshim: calls NAME=N …" (VRAMSHIM_LOG=debug at exit) into NAME → N.
std::map<std::string, uint64_t> shim_calls(const std::string& err);
// Parses the door programs' "fake NAME=N" lines (the simulated driver's own counters).
std::map<std::string, uint64_t> fake_calls(const std::string& out);

}  // namespace vramshim::testing
