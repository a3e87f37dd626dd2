// vramshim run: starts a command under the shim and reports on it when it ends.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
#include <utility>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/job_guard.h"
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

// The command runs in a process group of its own, as one a shell starts does. A signal for our
// group (kill -- -PGID, timeout, kill %1; Ctrl-C, Ctrl-Z while our group has the terminal) reaches
// us, and the command only as we pass it on; one for the command's group (Ctrl-C, Ctrl-Z once it
// has the terminal: on_stop) reaches it directly and not us: once either way. Sharing our group,
// the command got a signal for the group twice, directly and passed on, as nothing tells such a
// signal from one sent to us alone. We pass on what a job is sent, to the command's whole group as
// a signal for our group reached all of it before: every signal whose default action ends a
// process (a batch system's SIGXCPU or SIGUSR1 warning, SIGALRM, SIGPWR, the real-time ones) but
// those our own faults and writes raise (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT,
// SIGPIPE, SIGXFSZ), which must end us; SIGTSTP, which stops the command, and then us; SIGCONT;
// SIGWINCH. Not one ignored when we started (nohup): the command inherited it ignored too.
std::vector<int> passed_on_signals() {
  std::vector<int> signals = {SIGHUP,  SIGINT,    SIGQUIT, SIGUSR1,   SIGUSR2, SIGALRM,
                              SIGTERM, SIGSTKFLT, SIGXCPU, SIGVTALRM, SIGPROF, SIGIO,
                              SIGPWR,  SIGWINCH,  SIGTSTP, SIGCONT};
  for (int signal_number = SIGRTMIN; signal_number <= SIGRTMAX; ++signal_number) {
    signals.push_back(signal_number);
  }
  return signals;
}

volatile sig_atomic_t g_command = 0;  // the command's pid, its process group's id too

void pass_on(int signal_number) {
  const pid_t command = g_command;
  if (command <= 0) return;
  const int saved_errno = errno;
  // To its whole group, as a signal for our group reached all of it when it was ours; to the
  // command alone if it moved to another group.
  if (::kill(-command, signal_number) != 0) ::kill(command, signal_number);
  errno = saved_errno;
}

void on_child_changed(int) {}  // only interrupts the ppoll in wait_for

// The command's process, which leads its process group, and our controlling terminal (else -1);
// the dispositions we replaced and the mask we were given, ours again once the command has ended.
struct Job {
  pid_t pid = -1;
  int terminal = -1;
  std::vector<std::pair<int, struct sigaction>> given_actions;
  sigset_t given_mask;
};

// Gives the terminal from process group `from` to `to`, if `from` has it. SIGTTOU, which a process
// asking for the terminal from the background gets, is blocked while the command runs.
void move_terminal(int terminal, pid_t from, pid_t to) {
  if (terminal >= 0 && ::tcgetpgrp(terminal) == from) ::tcsetpgrp(terminal, to);
}

// The child's environment: ours, with the shim first in LD_PRELOAD and in VRAMSHIM_LIB, the options
// as VRAMSHIM_* and
// the notices' pipe, each replacing one we inherited (a run inside a run inherits the outer one's,
// and getenv would find that one first).
std::vector<std::string> child_environment(const RunOptions& options, const std::string& shim,
                                           const std::string& notices) {
  std::vector<std::pair<std::string, std::string>> overrides;
  const char* preload = std::getenv("LD_PRELOAD");
  overrides.push_back({"LD_PRELOAD", preload != nullptr && *preload ? shim + ":" + preload : shim});
  overrides.push_back({"VRAMSHIM_LIB", shim});  // absolute: a run of the job's finds the same one
  for (const auto& variable : shim_variables(options.shim)) overrides.push_back(variable);
  if (!options.socket.empty()) overrides.push_back({"VRAMSHIM_SOCKET", options.socket});
  overrides.push_back({"VRAMSHIM_REPORT_NOTICES", notices});

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

// Starts the command in a process group of its own and passes signals on to it. Throws
// ExitStatus{127} if it is not found, ExitStatus{126} if it cannot be executed. `notices` is the
// write end of the pipe the shim announces its reports on: the child keeps it open across exec.
Job start_child(std::vector<std::string>& command, std::vector<std::string>& environment,
                int notices) {
  std::vector<char*> argv = pointers_to(command);
  std::vector<char*> envp = pointers_to(environment);
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");

  Job job;
  job.terminal = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  // A command on the terminal of our foreground job, as `vramshim run python` typed at a shell, has
  // it from the start. Any other gets it when it uses it (on_stop): in `vramshim run x | less`,
  // less keeps it.
  const bool interactive = job.terminal >= 0 && ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO) &&
                           ::tcgetpgrp(job.terminal) == ::getpgrp();
  const pid_t parent = ::getpid();
  // Ours before the fork, so no change of the command's goes unseen; the command gets the one we
  // were given.
  struct sigaction child_changed = {}, given_child_action;
  child_changed.sa_handler = &on_child_changed;
  child_changed.sa_flags = SA_RESTART;
  sigemptyset(&child_changed.sa_mask);
  sigaction(SIGCHLD, &child_changed, &given_child_action);

  const std::vector<int> passed_on = passed_on_signals();
  sigset_t held, previous;
  sigemptyset(&held);
  for (int signal_number : passed_on) sigaddset(&held, signal_number);
  sigaddset(&held, SIGCHLD);
  sigaddset(&held, SIGTTOU);
  sigprocmask(SIG_BLOCK, &held, &previous);
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    if (interactive) ::tcsetpgrp(job.terminal, ::getpid());
    // A SIGKILL of our group (timeout -k, kill -9 %1) killed the command too when it was in the
    // group: now our death does.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);  // we died before that
    sigaction(SIGCHLD, &given_child_action, nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::fcntl(notices, F_SETFD, 0);
    restore_open_file_limit();
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
  job.pid = child;
  g_command = child;
  job.given_mask = previous;
  job.given_actions.push_back({SIGCHLD, given_child_action});
  for (int signal_number : passed_on) {
    struct sigaction action = {}, given;
    sigaction(signal_number, nullptr, &given);
    if (given.sa_handler == SIG_IGN) continue;
    action.sa_handler = &pass_on;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, nullptr);
    job.given_actions.push_back({signal_number, given});
  }
  // SIGCHLD stays held but in wait_for's ppoll, SIGTTOU while the command runs (move_terminal).
  sigset_t running = previous;
  sigaddset(&running, SIGCHLD);
  sigaddset(&running, SIGTTOU);
  sigprocmask(SIG_SETMASK, &running, nullptr);

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
    move_terminal(job.terminal, child, ::getpgrp());
    analyzer::print_diagnostic("cannot run '" + command[0] + "': " + std::strerror(error));
    // The shell's convention: 127 for a command not found, 126 for one found but not executable.
    throw ExitStatus{error == ENOENT || error == ENOTDIR ? 127 : 126};
  }
  return job;
}

// Stops us by `signal_number`'s default action, with the rest of our process group when `whom` is
// 0; returns once continued, at once if our group is orphaned (the kernel drops the stop then).
// SIGCONT only continues us meanwhile: our caller continues the command, having given it the
// terminal first.
void stop_by(int signal_number, pid_t whom) {
  struct sigaction default_action = {}, stop_action, continue_action;
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, &stop_action);
  sigaction(SIGCONT, &default_action, &continue_action);
  sigset_t only, held;
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  sigprocmask(SIG_UNBLOCK, &only, &held);
  ::kill(whom, signal_number);
  sigprocmask(SIG_SETMASK, &held, nullptr);
  sigaction(SIGCONT, &continue_action, nullptr);
  sigaction(signal_number, &stop_action, nullptr);
}

// The command stopped. Having used the terminal from the background (SIGTTIN, SIGTTOU), it gets
// the terminal if our group has it, and goes on. Otherwise, for job control (Ctrl-Z, or the
// terminal used while our job is in the background), we stop with the same signal, for the shell to
// see the job stop, the terminal taken back first; continued (fg, bg), we continue the command,
// with the terminal if it had it and our group has it again (fg). A SIGSTOP is left to whoever sent
// it, who will continue the command.
void on_stop(const Job& job, int signal_number) {
  if (signal_number != SIGTSTP && signal_number != SIGTTIN && signal_number != SIGTTOU) return;
  const pid_t ours = ::getpgrp();
  const pid_t foreground = job.terminal >= 0 ? ::tcgetpgrp(job.terminal) : -1;
  if (signal_number != SIGTSTP && (foreground == ours || foreground == job.pid)) {
    move_terminal(job.terminal, ours, job.pid);
    ::kill(-job.pid, SIGCONT);
    return;
  }
  move_terminal(job.terminal, job.pid, ours);
  // Stopped with the terminal (Ctrl-Z), the command alone got the keyboard's signal: our whole
  // group stops, as it would have, or a script that runs us would go on waiting for us, and its
  // shell for it, with nobody holding the terminal.
  stop_by(signal_number, foreground == job.pid ? 0 : ::getpid());
  if (foreground == job.pid) move_terminal(job.terminal, ours, job.pid);
  ::kill(-job.pid, SIGCONT);
}

// How the command ended: its wait status, and whether it had the terminal then.
struct Ending {
  int status;
  bool had_terminal;
};

// Waits until the command ends, reading the notices as they come: the pipe holds 64 KiB, and the
// shim drops a notice rather than wait for room. Signals are passed on meanwhile, and the
// command's stops answered (on_stop).
Ending wait_for(const Job& job, int notices, std::vector<ReportNotice>& announced) {
  sigset_t waiting;  // SIGCHLD, held otherwise, interrupts the ppoll
  sigprocmask(SIG_SETMASK, nullptr, &waiting);
  sigdelset(&waiting, SIGCHLD);
  pollfd pipe = {notices, POLLIN, 0};
  for (;;) {
    int status = 0;
    const pid_t changed = ::waitpid(job.pid, &status, WNOHANG | WUNTRACED);
    if (changed < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    if (changed == job.pid && WIFSTOPPED(status)) {
      on_stop(job, WSTOPSIG(status));
    } else if (changed == job.pid) {
      g_command = 0;
      const bool had_terminal = job.terminal >= 0 && ::tcgetpgrp(job.terminal) == job.pid;
      move_terminal(job.terminal, job.pid, ::getpgrp());
      return {status, had_terminal};
    } else if (::ppoll(&pipe, 1, nullptr, &waiting) > 0) {
      const std::vector<ReportNotice> read = read_report_notices(notices);
      announced.insert(announced.end(), read.begin(), read.end());
      if ((pipe.revents & POLLIN) == 0) pipe.fd = -1;  // no writer left: nothing more will come
    }
  }
}

// The command has ended: the signals we passed on act on us as before it started, so that one
// sent while the summary is rendered (Ctrl-C, SIGTERM) ends us rather than going nowhere.
void restore_signals(const Job& job) {
  for (const auto& [signal_number, action] : job.given_actions) {
    sigaction(signal_number, &action, nullptr);
  }
  sigprocmask(SIG_SETMASK, &job.given_mask, nullptr);
}

// The command died of `signal_number`: so do we, once the summary is out, for whoever waits for us
// to see what it would have of the command (a shell shows 128+N, and bash ends a loop at Ctrl-C
// only when the command died of SIGINT: one that exits caught it). With the rest of our process
// group when `whom` is 0: the keyboard's SIGINT or SIGQUIT reached only the command, which had the
// terminal, and a script that runs us ends at it only when it got it too, as it would have without
// us. No core dump of ours: we did not crash (RLIMIT_CORE for a core file; not dumpable for a
// core_pattern program, which a piped core_pattern starts whatever the limit).
void end_by(int signal_number, pid_t whom) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  rlimit core;
  if (::getrlimit(RLIMIT_CORE, &core) == 0) {
    core.rlim_cur = 0;
    ::setrlimit(RLIMIT_CORE, &core);
  }
  ::prctl(PR_SET_DUMPABLE, 0);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::kill(whom, signal_number);
}

std::string report_pattern(const RunOptions& options) {
  if (!options.shim.report.empty()) return options.shim.report;
  const char* configured = std::getenv("VRAMSHIM_REPORT");
  return configured != nullptr && *configured ? configured : "vramshim.%p.json";
}

// "exited with status 3", "was killed by SIGTERM": how the command ended, from its wait status.
std::string ending_of(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  const char* name = ::sigabbrev_np(WTERMSIG(status));
  return "was killed by " + (name != nullptr ? "SIG" + std::string(name)
                                             : "signal " + std::to_string(WTERMSIG(status)));
}

// Summarizes the exit report the child announced, or, when the child itself did not write one (a
// launcher such as a shell script), the last one a descendant announced; lists the other processes'
// exit reports after it, for `vramshim merge`. Without any exit report (the command crashed, or was
// killed after running out of memory), the last crash or out-of-memory report, the child's first:
// it is the job's last word. `status` is the child's wait status.
void print_summary(const RunOptions& options, pid_t child, int status,
                   const std::vector<ReportNotice>& announced) {
  if (report_pattern(options) == "off") return;
  // Any process of the job can announce any path, and root may run jobs whose processes are
  // another user's: what it names reaches the terminal made safe (print_diagnostic).
  const ReportNotice* chosen = nullptr;
  const ReportNotice* last_word = nullptr;  // the last crash or out-of-memory report
  std::vector<const ReportNotice*> exits;
  for (const ReportNotice& notice : announced) {
    if (notice.reason == "oom") analyzer::print_diagnostic("out-of-memory report " + notice.path);
    if (notice.reason == "crash") analyzer::print_diagnostic("crash report " + notice.path);
    if ((notice.reason == "oom" || notice.reason == "crash") &&
        (last_word == nullptr || last_word->pid != child || notice.pid == child)) {
      last_word = &notice;
    }
    if (notice.reason != "exit") continue;
    exits.push_back(&notice);
    if (chosen == nullptr || chosen->pid != child) chosen = &notice;
  }
  if (chosen == nullptr && last_word != nullptr) {
    analyzer::print_diagnostic("no exit report: pid " + std::to_string(child) + " " +
                               ending_of(status) + "; pid " + std::to_string(last_word->pid) +
                               "'s " + (last_word->reason == "crash" ? "crash" : "out-of-memory") +
                               " report " + last_word->path + ", summarized below");
    try {
      analyzer::TerminalSafeStream err(std::cerr);
      analyzer::render_summary(err, last_word->path, 5);
    } catch (const std::exception& e) {
      analyzer::print_diagnostic("cannot read the report " + last_word->path + ": " + e.what());
    }
    return;
  }
  if (chosen == nullptr) {
    // The shim writes an exit report for a process that used CUDA and ended by exit(), SIGTERM or
    // SIGHUP.
    analyzer::print_diagnostic(
        "no report from pid " + std::to_string(child) + ", which " + ending_of(status) +
        (WIFEXITED(status)
             ? " (it may not have used CUDA)"
             : " (it may not have used CUDA, or was killed before it could write one)"));
    return;
  }
  // One line per file: processes of a pattern without %p write the same one.
  std::vector<const ReportNotice*> others;
  for (const ReportNotice* notice : exits) {
    bool listed = notice->path == chosen->path;
    for (const ReportNotice* other : others) listed |= notice->path == other->path;
    if (!listed) others.push_back(notice);
  }
  analyzer::print_diagnostic("report " + chosen->path +
                             (others.empty()
                                  ? ""
                                  : " (pid " + std::to_string(chosen->pid) +
                                        "'s, summarized below; " + std::to_string(others.size()) +
                                        " more of the job's processes wrote one)"));
  try {
    analyzer::TerminalSafeStream err(std::cerr);  // the report names what anyone could have chosen
    analyzer::render_summary(err, chosen->path, 5);
  } catch (const std::exception& e) {
    analyzer::print_diagnostic("cannot read the report " + chosen->path + ": " + e.what());
  }
  if (others.empty()) return;
  for (const ReportNotice* other : others) {
    analyzer::print_diagnostic("also report " + other->path + " (pid " +
                               std::to_string(other->pid) + ")");
  }
  analyzer::print_diagnostic(
      "one report of the whole job: vramshim merge FILE... -o job.json (FILE: each report above)");
}

// "%p: that process's pid; %r: its rank": the codes of `pattern` that each process expands for
// itself (README, VRAMSHIM_REPORT), in the order given; empty when it has none.
std::string per_process_codes(const std::string& pattern) {
  std::string codes;
  std::string seen;
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    const char code = pattern[++i];
    const char* meaning = code == 'p'   ? "that process's pid"
                          : code == 'r' ? "that process's rank"
                          : code == 't' ? "the time it writes it"
                          : code == 'n' ? "its report's sequence number"
                                        : nullptr;
    if (meaning == nullptr || seen.find(code) != std::string::npos) continue;
    seen += code;
    codes += (codes.empty() ? "%" : "; %") + std::string(1, code) + ": " + meaning;
  }
  return codes;
}

// A report written into a directory we cannot write to would be found missing only once the job
// is over: we refuse to start it instead. A directory that does not exist yet (the job may make
// it), or that the pattern names with codes only the process knows (%p, %r, %t), is left to the
// process.
void check_report_directory(const std::string& pattern) {
  if (pattern == "off") return;
  const std::string directory = report_directory(pattern);
  if (directory.empty() || ::access(directory.c_str(), W_OK | X_OK) == 0 || errno == ENOENT) {
    return;
  }
  throw std::runtime_error("cannot write reports into " + directory + ": " + std::strerror(errno) +
                           " (name a directory you may write to with --report PATH, or --report "
                           "off)");
}

void run(RunOptions& options) {
  check_shim_settings(options.shim, "run");
  const std::string shim = find_shim();
  const std::string pattern = report_pattern(options);
  check_report_directory(pattern);
  int notices[2];
  if (::pipe2(notices, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  ::fcntl(notices[1], F_SETFL, O_NONBLOCK);  // a full pipe must not stall the child's shim
  struct stat pipe_info;
  if (::fstat(notices[1], &pipe_info) != 0) throw std::runtime_error("cannot inspect a pipe");
  // The pipe's device and inode too: the shim writes only while the descriptor is still this pipe.
  std::vector<std::string> environment =
      child_environment(options, shim,
                        std::to_string(notices[1]) + ":" + std::to_string(pipe_info.st_dev) + ":" +
                            std::to_string(pipe_info.st_ino));
  const Job job = start_child(options.command, environment, notices[1]);
  ::close(notices[1]);
  JobGuard guard(job.pid);
  if (pattern != "off") {
    // A launcher (a shell script, torchrun) writes no report of its own: with %p, each of its
    // processes names its report by its own pid, not by the launcher's; with %r, %t or %n, by
    // what only the process knows. A pattern without them names one file.
    const std::string codes = per_process_codes(pattern);
    analyzer::print_diagnostic(
        "pid " + std::to_string(job.pid) + " runs under the shim; " +
        (!codes.empty()
             ? "each of its processes that uses CUDA writes " + pattern + " (" + codes + ")"
             : "its report: " + expand_for_pid(pattern, job.pid)));
  }
  std::vector<ReportNotice> announced;
  const Ending ending = wait_for(job, notices[0], announced);
  guard.release();
  restore_signals(job);
  if (job.terminal >= 0) ::close(job.terminal);
  // And what its descendants announced since, without waiting for those still running.
  const std::vector<ReportNotice> last = read_report_notices(notices[0]);
  announced.insert(announced.end(), last.begin(), last.end());
  ::close(notices[0]);
  print_summary(options, job.pid, ending.status, announced);
  if (WIFSIGNALED(ending.status)) {
    const int signal_number = WTERMSIG(ending.status);
    const bool keyboard = signal_number == SIGINT || signal_number == SIGQUIT;
    end_by(signal_number, keyboard && ending.had_terminal ? 0 : ::getpid());
    throw ExitStatus{128 + signal_number};  // not ended by it after all
  }
  throw ExitStatus{WIFEXITED(ending.status) ? WEXITSTATUS(ending.status) : 1};
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
      "  the command's own, when it ran; when signal N ended it, vramshim ends by signal N\n"
      "  too once it has summarized (a shell shows 128+N); a signal that reaches vramshim once\n"
      "  the command has ended (Ctrl-C during the summary) ends it as it would end any program\n"
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
