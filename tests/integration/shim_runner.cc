#include "tests/integration/shim_runner.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace vramshim::testing {
namespace {

std::string dirname_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::map<std::string, uint64_t> parse_counts(const std::string& text, const std::string& prefix) {
  std::map<std::string, uint64_t> counts;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream words(line.substr(prefix.size()));
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      counts[word.substr(0, eq)] = std::stoull(word.substr(eq + 1));
    }
  }
  return counts;
}

}  // namespace

namespace {

// The directories short_temp_dir made, removed with everything in them when the test program
// ends (reports of hundreds of MB are written there: left behind, they fill the disk). Only the
// process that made them removes them, not a forked child calling exit().
class TemporaryDirectories {
 public:
  ~TemporaryDirectories() {
    if (getpid() != owner_) return;
    for (const std::string& directory : directories_) {
      std::error_code ignored;
      std::filesystem::remove_all(directory, ignored);
    }
  }

  void add(std::string directory) {
    const std::lock_guard<std::mutex> lock(mutex_);
    directories_.push_back(std::move(directory));
  }

 private:
  const pid_t owner_ = getpid();
  std::mutex mutex_;
  std::vector<std::string> directories_;
};

}  // namespace

std::string short_temp_dir() {
  static TemporaryDirectories made;
  char pattern[] = "/tmp/vramshim-test-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  made.add(pattern);
  return pattern;
}

std::string runfile(const std::string& workspace_relative) {
  char resolved[PATH_MAX];
  if (realpath(workspace_relative.c_str(), resolved) == nullptr) {
    throw std::runtime_error("runfile not found: " + workspace_relative);
  }
  return resolved;
}

std::string program(const std::string& name) {
  return runfile("tests/integration/programs/" + name);
}

RunOptions reporting_to(const std::string& pattern) {
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", pattern}, {"VRAMSHIM_SOCKET", "off"}};
  return options;
}

namespace {

// The child's environment: this test's, plus the shim, the simulated driver and `options.env`.
std::vector<std::string> child_environment(const RunOptions& options) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  if (options.preload_shim) env["LD_PRELOAD"] = runfile("shim/libvramshim.so");
  if (options.fake_driver) {
    const std::string fake_dir = dirname_of(runfile("tests/fakecuda/libcuda.so.1"));
    const std::string old = env.count("LD_LIBRARY_PATH") ? ":" + env["LD_LIBRARY_PATH"] : "";
    env["LD_LIBRARY_PATH"] = fake_dir + old;
  }
  for (const auto& [key, value] : options.env) env[key] = value;
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
  return env_strings;
}

}  // namespace

BackgroundProgram::BackgroundProgram(const std::vector<std::string>& argv,
                                     const RunOptions& options) {
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<std::string> argv_copy = argv;
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (!options.working_directory.empty() && chdir(options.working_directory.c_str()) != 0) {
      _exit(127);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
}

int BackgroundProgram::stop(int signal) {
  int status = 0;
  if (reaped_) return status;
  kill(pid_, signal);
  waitpid(pid_, &status, 0);
  reaped_ = true;
  return status;
}

BackgroundProgram::~BackgroundProgram() { stop(SIGKILL); }

ProgramRun run_program(const std::vector<std::string>& argv, const RunOptions& options) {
  std::vector<std::string> env_strings = child_environment(options);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (!options.working_directory.empty() && chdir(options.working_directory.c_str()) != 0) {
      _exit(127);
    }
    if (options.core_dumps) {
      rlimit core;
      getrlimit(RLIMIT_CORE, &core);
      core.rlim_cur = core.rlim_max;
      setrlimit(RLIMIT_CORE, &core);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProgramRun run;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  const time_t deadline = time(nullptr) + options.timeout_seconds;
  while (open_fds > 0) {
    if (time(nullptr) > deadline) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, 1000) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    run.term_signal = WTERMSIG(status);
    run.core_dumped = WCOREDUMP(status);
  }
  return run;
}

std::map<std::string, uint64_t> shim_calls(const std::string& err) {
  return parse_counts(err, "vramshim: calls");
}

std::map<std::string, uint64_t> fake_calls(const std::string& out) {
  return parse_counts(out, "fake ");
}

}  // namespace vramshim::testing
