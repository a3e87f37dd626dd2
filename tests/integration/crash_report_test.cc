// When the program dies of a fatal signal: a "crash" report beside the exit report's name, and the
// same death (signal, core dump) as without the shim; the program's own handlers, a report that
// cannot be written, a second fatal signal and fork children never keep the process alive. When
// SIGTERM or SIGHUP stops it: the exit report, then the same death.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <thread>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

// How long the shim's handler waits for the crash report (shim/control/fatal_signals.h).
constexpr double kCrashReportWaitSeconds = 5;

struct TimedRun {
  ProgramRun run;
  double seconds = 0;
  std::string directory;  // the working directory: reports and core files
};

// fatal_signal `how`, in a fresh working directory with core dumps allowed; under the shim its
// reports go to that directory as r.PID.json (so the crash report is r.PID.crash.json), and its
// control socket is ctl.sock there.
TimedRun run_fatal_signal(const std::string& how, bool preload_shim,
                          const std::string& report_pattern = "r.%p.json") {
  TimedRun timed;
  timed.directory = short_temp_dir();
  RunOptions options;
  options.preload_shim = preload_shim;
  options.env = {{"VRAMSHIM_REPORT", report_pattern}, {"VRAMSHIM_SOCKET", "ctl.sock"}};
  options.working_directory = timed.directory;
  options.core_dumps = true;
  options.timeout_seconds = 30;
  const auto start = std::chrono::steady_clock::now();
  timed.run = run_program({runfile("tests/integration/programs/fatal_signal"), how}, options);
  timed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return timed;
}

// The file names in `directory` that end in `suffix`.
std::vector<std::string> files_ending_in(const std::string& directory, const std::string& suffix) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

// The thread fatal_signal said it was about to crash on, or -1.
long crashing_thread(const std::string& out) {
  std::smatch match;
  if (!std::regex_search(out, match, std::regex("crashing thread=([0-9]+)"))) return -1;
  return std::stol(match[1].str());
}

// Whether a fatal signal here can leave a core file: core_pattern a plain name (a file in the
// working directory) and a hard limit above zero. Elsewhere only "as without the shim" is checked.
bool core_files_possible() {
  std::string pattern;
  std::getline(std::ifstream("/proc/sys/kernel/core_pattern"), pattern);
  rlimit core{};
  getrlimit(RLIMIT_CORE, &core);
  return !pattern.empty() && pattern.find_first_of("|/") == std::string::npos && core.rlim_max > 0;
}

// The same death as without the shim: the signal, and a core dump where one is possible.
void expect_same_death(const TimedRun& with, const TimedRun& without, int signal_number,
                       const std::string& how) {
  EXPECT_EQ(without.run.term_signal, signal_number) << how << ": " << without.run.err;
  EXPECT_EQ(with.run.term_signal, signal_number) << how << ": " << with.run.err;
  EXPECT_EQ(with.run.core_dumped, without.run.core_dumped) << how;
  if (core_files_possible()) {
    EXPECT_TRUE(with.run.core_dumped) << how;
  }
}

struct CrashCase {
  const char* how;
  int signal_number;
  const char* signal_name;
  enum { kNull, kZero, kSomewhere } address;  // null: a signal sent, not a fault
};

TEST(CrashReport, AFatalSignalWritesACrashReportAndTheProgramDiesAsWithoutTheShim) {
  for (const CrashCase& c : {CrashCase{"segv", SIGSEGV, "SIGSEGV", CrashCase::kZero},
                             CrashCase{"thread-segv", SIGSEGV, "SIGSEGV", CrashCase::kZero},
                             CrashCase{"bus", SIGBUS, "SIGBUS", CrashCase::kNull},
                             CrashCase{"abort", SIGABRT, "SIGABRT", CrashCase::kNull},
                             CrashCase{"ill", SIGILL, "SIGILL", CrashCase::kSomewhere},
                             CrashCase{"fpe", SIGFPE, "SIGFPE", CrashCase::kSomewhere}}) {
    const TimedRun without = run_fatal_signal(c.how, /*preload_shim=*/false);
    const TimedRun with = run_fatal_signal(c.how, /*preload_shim=*/true);
    expect_same_death(with, without, c.signal_number, c.how);

    const std::vector<std::string> crash_reports = files_ending_in(with.directory, ".crash.json");
    ASSERT_EQ(crash_reports.size(), 1u) << c.how << ": " << with.run.err;
    const nlohmann::json report = read_report(with.directory + "/" + crash_reports[0]);
    const int pid = report["process"]["pid"];
    EXPECT_EQ(crash_reports[0], "r." + std::to_string(pid) + ".crash.json") << c.how;
    EXPECT_FALSE(fs::exists(with.directory + "/r." + std::to_string(pid) + ".json")) << c.how;
    EXPECT_FALSE(fs::exists(with.directory + "/ctl.sock")) << c.how << ": socket left behind";
    EXPECT_EQ(report["reason"], "crash") << c.how;
    EXPECT_EQ(report["devices"][0]["in_use_bytes"], 4096) << c.how;
    const nlohmann::json& crash = report["crash"];
    EXPECT_EQ(crash["signal"], c.signal_number) << c.how;
    EXPECT_EQ(crash["signal_name"], c.signal_name) << c.how;
    EXPECT_EQ(crash["thread_id"], crashing_thread(with.run.out)) << c.how << ": " << with.run.out;
    switch (c.address) {
      case CrashCase::kNull:
        EXPECT_TRUE(crash["address"].is_null()) << c.how << crash;
        break;
      case CrashCase::kZero:
        EXPECT_EQ(crash["address"], "0x0") << c.how;
        break;
      case CrashCase::kSomewhere:
        EXPECT_TRUE(crash["address"].is_string() && crash["address"] != "0x0") << c.how << crash;
        break;
    }
    fs::remove_all(without.directory);
    fs::remove_all(with.directory);
  }
}

TEST(CrashReport, TheProgramsOwnHandlerRunsAndACrashReportComesOnlyIfItCallsTheOneItReplaced) {
  struct OwnHandlerCase {
    const char* how;
    bool crash_report;
  };
  for (const OwnHandlerCase& c :
       {OwnHandlerCase{"own-first", false}, OwnHandlerCase{"own-later", false},
        OwnHandlerCase{"own-later-chaining", true}}) {
    const TimedRun without = run_fatal_signal(c.how, /*preload_shim=*/false);
    const TimedRun with = run_fatal_signal(c.how, /*preload_shim=*/true);
    expect_same_death(with, without, SIGSEGV, c.how);
    EXPECT_NE(with.run.out.find("own handler ran"), std::string::npos) << c.how << with.run.out;
    EXPECT_EQ(files_ending_in(with.directory, ".crash.json").size(), c.crash_report ? 1u : 0u)
        << c.how << ": " << with.run.err;
    if (std::string(c.how) == "own-first") {
      // The shim left the program's SIGSEGV handler alone and took the other four.
      EXPECT_NE(
          with.run.out.find("SIGSEGV=own SIGBUS=other SIGABRT=other SIGFPE=other SIGILL=other"),
          std::string::npos)
          << with.run.out;
    }
    fs::remove_all(without.directory);
    fs::remove_all(with.directory);
  }
}

TEST(CrashReport, ACrashTheControlThreadCannotReportEndsWithinTheTimeBound) {
  // The crashed thread holds the loader's lock, which the report's module map needs.
  const TimedRun without = run_fatal_signal("stuck", /*preload_shim=*/false);
  const TimedRun with = run_fatal_signal("stuck", /*preload_shim=*/true);
  expect_same_death(with, without, SIGSEGV, "stuck");
  EXPECT_LT(with.seconds, kCrashReportWaitSeconds + 3);
  EXPECT_NE(with.run.err.find("vramshim: no crash report: not written within 5 s"),
            std::string::npos)
      << with.run.err;
  EXPECT_TRUE(files_ending_in(with.directory, ".crash.json").empty());
  fs::remove_all(without.directory);
  fs::remove_all(with.directory);
}

TEST(CrashReport, AFatalSignalWhileACrashWaitsForItsReportEndsTheProcessAtOnce) {
  const TimedRun with = run_fatal_signal("second-crash", /*preload_shim=*/true);
  EXPECT_EQ(with.run.term_signal, SIGBUS) << with.run.err;
  EXPECT_LT(with.seconds, kCrashReportWaitSeconds - 2);
  if (core_files_possible()) {
    EXPECT_TRUE(with.run.core_dumped);
  }
  EXPECT_TRUE(files_ending_in(with.directory, ".crash.json").empty());
  fs::remove_all(with.directory);
}

TEST(CrashReport, ForkChildrenAndProcessesWithReportsOffWriteNone) {
  const TimedRun forked = run_fatal_signal("fork-child-segv", /*preload_shim=*/true);
  EXPECT_EQ(forked.run.term_signal, SIGSEGV) << forked.run.err;
  EXPECT_NE(forked.run.out.find("child_signal=11"), std::string::npos) << forked.run.out;
  const std::vector<std::string> crash_reports = files_ending_in(forked.directory, ".crash.json");
  EXPECT_EQ(crash_reports,
            std::vector<std::string>{"r." + std::to_string(crashing_thread(forked.run.out)) +
                                     ".crash.json"});
  fs::remove_all(forked.directory);

  const TimedRun off = run_fatal_signal("own-first", /*preload_shim=*/true, "off");
  EXPECT_EQ(off.run.term_signal, SIGSEGV) << off.run.err;
  // Nothing installed: the program's own handler, and the default for the other four.
  EXPECT_NE(off.run.out.find("SIGSEGV=own SIGBUS=default SIGABRT=default SIGFPE=default "
                             "SIGILL=default"),
            std::string::npos)
      << off.run.out;
  fs::remove_all(off.directory);
}

// cached_idle holding 2 MiB under the shim, in a fresh directory where its report is r.PID.json,
// once the shim has started (its socket there, and a moment for the allocations).
struct HoldingProgram {
  std::string directory = short_temp_dir();
  std::unique_ptr<BackgroundProgram> process;

  explicit HoldingProgram(const std::vector<std::string>& prefix = {},
                          const std::string& mode = "hold") {
    RunOptions options;
    options.env = {{"VRAMSHIM_REPORT", "r.%p.json"}, {"VRAMSHIM_SOCKET", "ctl.sock"}};
    options.working_directory = directory;
    std::vector<std::string> argv = prefix;
    for (const std::string& arg : {runfile("tests/integration/programs/cached_idle"), mode,
                                   std::string("2"), std::string("1048576")}) {
      argv.push_back(arg);
    }
    process = std::make_unique<BackgroundProgram>(argv, options);
    for (int i = 0; i < 200 && !fs::exists(directory + "/ctl.sock"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::string report_path() const {
    return directory + "/r." + std::to_string(process->pid()) + ".json";
  }
};

// SIGTERM or SIGHUP (kill, timeout, a batch system's time limit, a closed terminal) ends a process
// without its exit handlers: the shim writes the exit report first, then the signal ends it as
// without the shim.
TEST(Termination, WritesTheExitReportThenEndsTheProcessByTheSignal) {
  for (const int signal_number : {SIGTERM, SIGHUP}) {
    HoldingProgram holding;
    ASSERT_TRUE(fs::exists(holding.directory + "/ctl.sock"));
    const int status = holding.process->stop(signal_number);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << status;
    ASSERT_TRUE(fs::exists(holding.report_path())) << signal_number;
    const nlohmann::json report = read_report(holding.report_path());
    EXPECT_EQ(report.at("reason"), "exit");
    const nlohmann::json& terminated = report.at("terminated");
    EXPECT_EQ(terminated.at("signal"), signal_number);
    EXPECT_EQ(terminated.at("signal_name"), signal_number == SIGTERM ? "SIGTERM" : "SIGHUP");
    EXPECT_EQ(terminated.at("sender_pid"), getpid());
    EXPECT_EQ(report.at("devices")[0].at("in_use_bytes"), 2u << 20);
    EXPECT_FALSE(report.contains("crash"));
    EXPECT_TRUE(files_ending_in(holding.directory, ".crash.json").empty());
    fs::remove_all(holding.directory);
  }
}

// A handler the program installs later and that calls the one it replaced (chaining) found the
// default there without the shim, and called nothing: the program stops its own way, with its exit
// report, and the shim's handler does nothing.
TEST(Termination, AProgramsLaterHandlerThatChainsStopsItsOwnWay) {
  HoldingProgram holding({}, "hold_chaining");
  ASSERT_TRUE(fs::exists(holding.directory + "/ctl.sock"));
  const int status = holding.process->stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(fs::exists(holding.report_path()));
  const nlohmann::json report = read_report(holding.report_path());
  EXPECT_EQ(report.at("reason"), "exit");
  EXPECT_FALSE(report.contains("terminated"));
  fs::remove_all(holding.directory);
}

// A pid namespace's init (a container's program without an init of its own) ignores SIGTERM at its
// default: the shim installs nothing there, and stays whole (its socket, its exit report to come).
TEST(Termination, APidNamespacesInitIgnoresItAsWithoutTheShim) {
  if (system("unshare --pid --fork true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no pid namespaces here";
  }
  HoldingProgram holding({"/usr/bin/unshare", "--pid", "--fork", "--kill-child"});
  ASSERT_TRUE(fs::exists(holding.directory + "/ctl.sock"));
  // The program is unshare's child: pid 1 inside, its report r.1.json.
  std::ifstream children("/proc/" + std::to_string(holding.process->pid()) + "/task/" +
                         std::to_string(holding.process->pid()) + "/children");
  pid_t init = 0;
  ASSERT_TRUE(children >> init);
  ASSERT_EQ(kill(init, SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(kill(init, 0), 0) << "SIGTERM ended the namespace's init";
  EXPECT_FALSE(fs::exists(holding.directory + "/r.1.json"));
  EXPECT_TRUE(fs::exists(holding.directory + "/ctl.sock"));
  fs::remove_all(holding.directory);
}

// A signal the program ignores stays ignored (nohup, a shell's `trap "" HUP`).
TEST(Termination, AnIgnoredSignalStaysIgnored) {
  HoldingProgram holding({"/bin/sh", "-c", "trap '' HUP; exec \"$0\" \"$@\""});
  ASSERT_TRUE(fs::exists(holding.directory + "/ctl.sock"));
  ASSERT_EQ(kill(holding.process->pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(waitpid(holding.process->pid(), nullptr, WNOHANG), 0) << "SIGHUP ended it";
  EXPECT_FALSE(fs::exists(holding.report_path()));
  const int status = holding.process->stop(SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(read_report(holding.report_path()).at("terminated").at("signal_name"), "SIGTERM");
  fs::remove_all(holding.directory);
}

}  // namespace
}  // namespace vramshim::testing
