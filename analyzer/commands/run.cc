// vramshim run: starts a command under the shim and reports on it when it ends.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_location.h"
#include "analyzer/commands/shim_location.h"
#include "analyzer/commands/shim_settings.h"
#include "analyzer/render/report_summary.h"
#include "analyzer/render/terminal_safe.h"

extern char** environ;

namespace vramshim::cli {
namespace {

struct RunOptions {
  ShimSettings shim;
  std::string socket;
  std::vector<std::string> command;
};

// Signals passed on to the child. Those a terminal sends to its whole foreground process group
// (Ctrl-C) already reached the child, which shares our group, so they are not sent twice.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child = 0;

void forward_signal(int signal_number, siginfo_t* info, void*) {
  if (g_child <= 0) return;
  if (info != nullptr && info->si_code == SI_KERNEL)
    return;  // from the terminal, to the whole group
  ::kill(static_cast<pid_t>(g_child), signal_number);
}

// The child's environment: ours, with the shim first in LD_PRELOAD and the options as VRAMSHIM_*.
std::vector<std::string> child_environment(const RunOptions& options, const std::string& shim) {
  std::vector<std::pair<std::string, std::string>> overrides;
  const char* preload = std::getenv("LD_PRELOAD");
  overrides.push_back({"LD_PRELOAD", preload != nullptr && *preload ? shim + ":" + preload : shim});
  for (const auto& variable : shim_variables(options.shim)) overrides.push_back(variable);
  if (!options.socket.empty()) overrides.push_back({"VRAMSHIM_SOCKET", options.socket});

  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    const std::string name = variable.substr(0, variable.find('='));
    bool replaced = false;
    for (const auto& [override_name, value] : overrides) replaced |= name == override_name;
    if (!replaced) environment.push_back(variable);
  }
  for (const auto& [name, value] : overrides) environment.push_back(name + "=" + value);
  return environment;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Starts the command with forwarded signals; returns its pid. Throws ExitStatus{127} if it is not
// found, ExitStatus{126} if it cannot be executed. `notices` is the write end of the pipe the shim
// announces its reports on: the child keeps it open across exec.
pid_t start_child(std::vector<std::string>& command, std::vector<std::string>& environment,
                  int notices) {
  std::vector<char*> argv = pointers_to(command);
  std::vector<char*> envp = pointers_to(environment);
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");

  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int signal_number : kForwardedSignals) sigaddset(&forwarded, signal_number);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  const pid_t child = ::fork();
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::fcntl(notices, F_SETFD, 0);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    ssize_t ignored = ::write(exec_error[1], &error, sizeof(error));
    (void)ignored;
    _exit(127);
  }
  ::close(exec_error[1]);
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::close(exec_error[0]);
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  }
  g_child = child;
  for (int signal_number : kForwardedSignals) {
    struct sigaction action = {};
    action.sa_sigaction = &forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, nullptr);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);

  int error = 0;
  ssize_t got;
  do {
    got = ::read(exec_error[0], &error, sizeof(error));
  } while (got < 0 && errno == EINTR);
  ::close(exec_error[0]);
  if (got == static_cast<ssize_t>(sizeof(error))) {
    int status;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    analyzer::print_diagnostic("cannot run '" + command[0] + "': " + std::strerror(error));
    // The shell's convention: 127 for a command not found, 126 for one found but not executable.
    throw ExitStatus{error == ENOENT || error == ENOTDIR ? 127 : 126};
  }
  return child;
}

int wait_for(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string report_pattern(const RunOptions& options) {
  if (!options.shim.report.empty()) return options.shim.report;
  const char* configured = std::getenv("VRAMSHIM_REPORT");
  return configured != nullptr && *configured ? configured : "vramshim.%p.json";
}

// Summarizes the exit report the child announced, or, when the child itself did not write one (a
// launcher such as a shell script), the last one a descendant announced.
void print_summary(const RunOptions& options, pid_t child, int notices) {
  if (report_pattern(options) == "off") return;
  // Any process of the job can announce any path, and root may run jobs whose processes are
  // another user's: what it names reaches the terminal made safe (print_diagnostic).
  const std::vector<ReportNotice> announced = read_report_notices(notices);
  const ReportNotice* chosen = nullptr;
  for (const ReportNotice& notice : announced) {
    if (notice.reason == "oom") {
      analyzer::print_diagnostic("out-of-memory report " + notice.path);
    }
    if (notice.reason != "exit") continue;
    if (chosen == nullptr || chosen->pid != child) chosen = &notice;
  }
  if (chosen == nullptr) {
    std::fprintf(stderr,
                 "vramshim: no report from pid %d (the program crashed before writing one?)\n",
                 child);
    return;
  }
  try {
    analyzer::print_diagnostic("report " + chosen->path);
    analyzer::TerminalSafeStream err(std::cerr);  // the report names what anyone could have chosen
    analyzer::render_summary(err, chosen->path, 5);
  } catch (const std::exception& e) {
    analyzer::print_diagnostic("cannot read the report " + chosen->path + ": " + e.what());
  }
}

void run(RunOptions& options) {
  check_shim_settings(options.shim);
  const std::string shim = find_shim();
  int notices[2];
  if (::pipe2(notices, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  ::fcntl(notices[1], F_SETFL, O_NONBLOCK);  // a full pipe must not stall the child's shim
  struct stat pipe_info;
  if (::fstat(notices[1], &pipe_info) != 0) throw std::runtime_error("cannot inspect a pipe");
  std::vector<std::string> environment = child_environment(options, shim);
  // The pipe's device and inode too: the shim writes only while the descriptor is still this pipe.
  environment.push_back("VRAMSHIM_REPORT_NOTICES=" + std::to_string(notices[1]) + ":" +
                        std::to_string(pipe_info.st_dev) + ":" + std::to_string(pipe_info.st_ino));
  const pid_t child = start_child(options.command, environment, notices[1]);
  ::close(notices[1]);
  const std::string pattern = report_pattern(options);
  if (pattern != "off") {
    analyzer::print_diagnostic(
        "pid " + std::to_string(child) +
        " runs under the shim; its report: " + expand_for_pid(pattern, child));
  }
  const int status = wait_for(child);
  print_summary(options, child, notices[0]);
  ::close(notices[0]);
  throw ExitStatus{status};
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run",
      "Run a command under the shim, then summarize its report (exits with the command's status)");
  add_shim_setting_options(command, options->shim);
  command->add_option("--socket", options->socket, "Control socket path, or off");
  // The command starts at the first word that is not one of run's options: the rest is its own.
  takes_command_line(command, options->command);
  command->footer(
      "COMMAND [ARGS...]: the program to run and its arguments, after run's options (or after "
      "--).\n"
      "Example: vramshim run --limit 20G python train.py --epochs 3\n"
      "Exit status:\n"
      "  the command's own, when it ran; 128+N when signal N ended it\n"
      "  126  the command cannot be executed (one line on standard error)\n"
      "  127  the command is not found (one line on standard error)\n"
      "  1    vramshim could not run it otherwise (one line on standard error)\n"
      "  2    a usage error (one line)\n");
  command->callback([options] {
    if (options->command.empty()) {
      throw UsageError("run: a command to run is required (vramshim help run)");
    }
    run(*options);
  });
}

}  // namespace vramshim::cli
