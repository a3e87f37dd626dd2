// What the shim must never do to the program it lives in: turn a fault into a hang, end it when its
// own host memory runs out or when one of its threads is cancelled, hang a child forked while it
// starts, let a late report overwrite the exit report, remove a file that is not its own socket, or
// interrupt the program's sleep when asked over the socket.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <utility>
#include <vector>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

RunOptions quiet() {
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"}, {"VRAMSHIM_SOCKET", "off"}};
  return options;
}

long long figure(const std::string& out, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(out, match, std::regex("(^|\\s)" + key + "=(-?[0-9]+)"))) return -1;
  return std::stoll(match[2].str());
}

struct FatalCase {
  const char* variable;
  const char* value;
  const char* how;
  int signal_number;
};

TEST(ShimSafety, FaultSignalsAreRefusedAsControlSignalsAndTheProgramDiesAsWithoutTheShim) {
  for (const FatalCase& c : {FatalCase{"VRAMSHIM_FLUSH_SIGNAL", "11", "segv", SIGSEGV},
                             FatalCase{"VRAMSHIM_REPORT_SIGNAL", "7", "bus", SIGBUS},
                             FatalCase{"VRAMSHIM_FLUSH_SIGNAL", "6", "abort", SIGABRT}}) {
    RunOptions options = quiet();
    options.env[c.variable] = c.value;
    options.timeout_seconds = 20;
    const ProgramRun run = run_program({program("fatal_signal"), c.how}, options);
    EXPECT_EQ(run.term_signal, c.signal_number) << c.variable << "=" << c.value << run.err;
    EXPECT_NE(run.out.find("allocated"), std::string::npos) << run.out;
    EXPECT_NE(run.err.find(std::string("vramshim: ") + c.variable + "=\"" + c.value +
                           "\" is not USR1, USR2, none or a real-time signal"),
              std::string::npos)
        << run.err;
  }
}

// A thread cancelled inside a hooked call must end as without the shim, at a cancellation point,
// and leave the pool serving: the shim's frames cannot be unwound by a cancellation (it aborted the
// process), so the shim holds cancellation back while it works.
TEST(ShimSafety, ThreadsCancelledInsideHookedCallsEndAndLeaveThePoolServing) {
  for (const char* pool : {"on", "off"}) {
    RunOptions options = quiet();
    options.env["VRAMSHIM_POOL"] = pool;
    options.timeout_seconds = 30;
    const ProgramRun run = run_program({program("cancelled_threads")}, options);
    ASSERT_EQ(run.exit_code, 0) << "VRAMSHIM_POOL=" << pool << run.out << run.err;
    for (const char* name : {"grow", "legacy", "passthrough_free"}) {
      // Held back until the call returned, then cancelled at the thread's next cancellation point.
      EXPECT_NE(run.out.find(std::string(name) + " cancelled=1 returned=1 result=0"),
                std::string::npos)
          << run.out;
    }
    // The same through the pool's retry and the failure's facts, then the driver's refusal.
    EXPECT_NE(run.out.find("out_of_memory cancelled=1 returned=1 result=2"), std::string::npos)
        << run.out;
    EXPECT_EQ(figure(run.out, "after_pairs"), 64) << run.out;
    EXPECT_EQ(figure(run.out, "driver_errors"), 0) << run.out;
    EXPECT_EQ(run.err.find("vramshim: internal failure"), std::string::npos) << run.err;
  }
}

// The shim's own lines on stderr (a setting it cannot use, at the first CUDA call; a report it
// cannot write, at exit) must not end a program whose stderr is a pipe nobody reads any more (`job
// 2>&1 | tee log`, tee gone): a program thread writing there got SIGPIPE and died (status 141).
TEST(ShimSafety, ItsWarningsIntoAPipeWithoutAReaderLeaveTheProgramAlone) {
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"VRAMSHIM_STACKS", "bogus"}, {"VRAMSHIM_REPORT", "/nonexistent/report.json"}}) {
    RunOptions options = quiet();
    options.env[variable] = value;
    // The group's stderr is the pipe to `true`, gone by the time the program starts.
    const ProgramRun run = run_program(
        {"/bin/bash", "-c",
         "exec 3>&1; { sleep 0.3; \"$0\"; echo \"status=$?\" >&3; } 2>&1 >/dev/null | true",
         program("pool_pairs")},
        options);
    EXPECT_EQ(run.out, "status=0\n") << variable << "=" << value << run.err;
  }
}

// Not run under AddressSanitizer (its shadow memory needs the address space the limit takes away).
TEST(ShimSafety, HostMemoryRunningOutInsideTheShimFailsOneCallAndStopsThePoolSafely) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_IDLE_RELEASE"] = "1";
  options.env["VRAMSHIM_REPORT"] = (fs::path(::testing::TempDir()) / "exhausted.json").string();
  const ProgramRun run = run_program({program("host_memory_exhausted"), "exit_limited"}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_GT(figure(run.out, "failed_at"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "failure"), CUDA_ERROR_OUT_OF_MEMORY) << run.out;
  EXPECT_EQ(figure(run.out, "corrupted"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "after"), 1000) << run.out;
  EXPECT_EQ(figure(run.out, "segment_frees"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "driver_errors"), 0) << run.out;
  // One line, whichever part of the shim met the failure first.
  const std::string line = "vramshim: internal failure in ";
  const size_t first = run.err.find(line);
  EXPECT_NE(first, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(line, first + 1), std::string::npos) << run.err;
}

// The start takes a lock, and resolves the driver's functions behind a guard: a child forked
// meanwhile inherits them held. The window is short, so the program runs 20 times (before the fix,
// about one run in six had a child waiting for ever).
TEST(ShimSafety, AChildForkedWhileTheShimStartsNeverWaitsForItsParentsLocks) {
  int forks = 0;
  int hung = 0;
  for (int run = 0; run < 20; ++run) {
    const ProgramRun result = run_program({program("fork_during_start")}, quiet());
    ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
    forks += static_cast<int>(figure(result.out, "forks"));
    hung += static_cast<int>(figure(result.out, "hung"));
  }
  EXPECT_GT(forks, 20);
  EXPECT_EQ(hung, 0) << "of " << forks << " children";
}

// exit() from a signal handler that interrupted a hooked call holding the pool's lock: before the
// fix, 19 of 30 runs waited for ever in the shim's exit handler. The exit report is given up after
// a bounded wait instead.
TEST(ShimSafety, ExitFromASignalHandlerInsideAHookedCallEndsTheProcess) {
  for (int run_index = 0; run_index < 4; ++run_index) {
    RunOptions options = quiet();
    options.timeout_seconds = 20;
    options.env["VRAMSHIM_REPORT"] = short_temp_dir() + "/report.json";
    const ProgramRun run = run_program({program("exit_in_signal_handler")}, options);
    EXPECT_EQ(run.exit_code, 7) << "run " << run_index << ": " << run.err;
  }
}

// exit() from a handler that interrupted malloc with the arena's lock held: the program's own exit
// path allocates nothing, so the shim's must not either (its exit handler started a helper thread,
// whose stack's TLS waited for ever on that lock: 6 of 8 runs hung, a SIGTERM blocked too). The
// control thread writes the report instead.
TEST(ShimSafety, ExitFromASignalHandlerThatInterruptedMallocEndsTheProcessWithItsReport) {
  const std::string directory = short_temp_dir();
  for (int run_index = 0; run_index < 4; ++run_index) {
    RunOptions options = quiet();
    options.timeout_seconds = 20;
    options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
    std::filesystem::remove(directory + "/report.json");
    const ProgramRun run = run_program({program("exit_in_signal_handler_during_malloc")}, options);
    ASSERT_EQ(run.exit_code, 7) << "run " << run_index << ": " << run.err;
    EXPECT_EQ(read_report(directory + "/report.json")["reason"], "exit") << "run " << run_index;
  }
}

// The exit report waits for no other work of the shim's: here the control thread hands 600
// cached segments back to a slow driver (about 15 s) when the program returns. Written by the
// control thread, the report waited behind that work and was given up after 10 s: no report, and
// the exit 11.5 s late.
TEST(ShimSafety, TheExitReportDoesNotWaitForTheControlThreadsWork) {
  const std::string directory = short_temp_dir();
  RunOptions options = quiet();
  options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
  options.env["VRAMSHIM_IDLE_RELEASE"] = "0.2";
  const ProgramRun run = run_program({program("exit_during_a_release")}, options);
  ASSERT_EQ(run.exit_code, 25) << run.err;
  EXPECT_EQ(run.err.find("no exit report"), std::string::npos) << run.err;
  EXPECT_EQ(read_report(directory + "/report.json")["reason"], "exit");
}

// The process ends when the program's last thread does, its main thread gone with pthread_exit():
// the shim's threads, which block every signal, kept it running for good (a SIGTERM pending with
// no thread to take it; only SIGKILL ended it). Its exit handlers then run with the program's
// signal mask: the last one's SIGUSR1 ends it with status 40 (on the control thread's mask, the
// signal stayed blocked and the status was 0).
TEST(ShimSafety, AProgramWhoseThreadsAllEndedEndsWithItsReport) {
  const std::string directory = short_temp_dir();
  RunOptions options = quiet();
  options.timeout_seconds = 20;
  options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
  const ProgramRun run = run_program({program("main_ends_with_pthread_exit")}, options);
  ASSERT_EQ(run.exit_code, 40) << run.err;
  EXPECT_EQ(read_report(directory + "/report.json")["reason"], "exit");
}

TEST(ShimSafety, TheFlushAndReportSignalsEndAForkedChildAsWithoutTheShim) {
  const ProgramRun run = run_program({program("signal_in_forked_child")}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("signal 10: ended_by_signal=10"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("signal 12: ended_by_signal=12"), std::string::npos) << run.out;
}

// Two installations preloaded at once (a wheel's copy of the shim and a tarball's): the first one
// serves the program and must find the driver behind the second, not the second's hooks. Before,
// each copy pooled the other's blocks: the report said 566 MiB in use where none was.
TEST(ShimSafety, ASecondCopyOfTheShimPreloadedChangesNothing) {
  const std::string directory = short_temp_dir();
  const std::string copy = directory + "/copy/libvramshim.so";
  std::filesystem::create_directory(directory + "/copy");
  std::filesystem::copy_file(runfile("shim/libvramshim.so"), copy);
  std::vector<nlohmann::json> devices;
  for (const std::string& preload :
       {runfile("shim/libvramshim.so"), runfile("shim/libvramshim.so") + ":" + copy}) {
    RunOptions options;
    options.env = {{"VRAMSHIM_REPORT", directory + "/report.json"},
                   {"VRAMSHIM_SOCKET", "off"},
                   {"LD_PRELOAD", preload}};
    const ProgramRun run = run_program({program("pool_pairs")}, options);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err.find("in use by another process"), std::string::npos) << run.err;
    devices.push_back(read_report(directory + "/report.json")["devices"][0]);
  }
  for (const char* figure : {"in_use_bytes", "reserved_bytes", "driver_alloc_calls"}) {
    EXPECT_EQ(devices[1][figure], devices[0][figure]) << figure;
  }
  EXPECT_EQ(devices[1]["in_use_bytes"], 0);
}

TEST(ShimSafety, TheExitReportIsTheLastWordWhileReportSignalsArrive) {
  const std::string directory = short_temp_dir();
  for (int run_index = 0; run_index < 15; ++run_index) {
    RunOptions options;
    options.env = {{"VRAMSHIM_REPORT", directory + "/report.json"}, {"VRAMSHIM_SOCKET", "off"}};
    const ProgramRun run = run_program({program("report_signals_at_exit")}, options);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(read_report(directory + "/report.json")["reason"], "exit") << "run " << run_index;
  }
}

// A SIGTERM while the exit report is written ends the process as without the shim, and the exit
// report, written first, is its report: the shim said "no exit report: the process is exiting"
// although the report was there.
TEST(ShimSafety, ASigtermDuringTheExitReportKeepsThatReport) {
  const std::string directory = short_temp_dir();
  RunOptions options = quiet();
  options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
  const ProgramRun run = run_program({program("sigterm_during_exit_report")}, options);
  EXPECT_EQ(run.term_signal, SIGTERM) << run.exit_code << run.err;
  EXPECT_EQ(run.err.find("no exit report"), std::string::npos) << run.err;
  EXPECT_EQ(read_report(directory + "/report.json")["reason"], "exit");
}

TEST(ShimSafety, ARelativeSocketPathIsResolvedAtStartAndOnlyTheShimsOwnSocketIsRemoved) {
  const std::string base = short_temp_dir();
  const std::string started = base + "/started", moved = base + "/moved";
  fs::create_directories(started);
  fs::create_directories(moved);
  std::ofstream(moved + "/ctl.sock") << "the program's own file";
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"}, {"VRAMSHIM_SOCKET", "ctl.sock"}};
  const ProgramRun run = run_program({program("relative_socket"), started, moved}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(fs::exists(moved + "/ctl.sock")) << "the program's file was removed";
  EXPECT_FALSE(fs::exists(fs::symlink_status(started + "/ctl.sock")))
      << "the shim's own socket was left behind";
}

TEST(ShimSafety, ARelativeReportPatternIsResolvedAtStart) {
  const std::string base = short_temp_dir();
  const std::string started = base + "/started", moved = base + "/moved";
  fs::create_directories(started);
  fs::create_directories(moved);
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "mem.json"}, {"VRAMSHIM_SOCKET", "off"}};
  const ProgramRun run = run_program({program("relative_socket"), started, moved}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_report(started + "/mem.json")["reason"], "exit") << run.err;
  EXPECT_FALSE(fs::exists(moved + "/mem.json")) << "the exit report followed the program's chdir";
}

TEST(ShimSafety, AFlushOverTheSocketInterruptsNothingWhileTheFlushSignalDoes) {
  for (const char* how : {"socket", "signal"}) {
    RunOptions options;
    options.env = {{"VRAMSHIM_REPORT", "off"},
                   {"VRAMSHIM_SOCKET", short_temp_dir() + "/flush.sock"}};
    const ProgramRun run = run_program({program("sleep_through_flush"), how}, options);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(figure(run.out, "driver_live"), 0) << how << ": not flushed; " << run.out;
    EXPECT_EQ(figure(run.out, "interrupted"), std::string(how) == "signal" ? 1 : 0)
        << how << ": " << run.out;
  }
}

// A program may close any descriptor and reuse its number (os.closerange, a daemon's close loop,
// dup2): the shim's control thread then read the program's file at its wake-up number, spun on it
// (poll), wrote 8 bytes into it at exit and at each flush signal, and closed the program's files
// at its socket's number at exit and in forked children. Now it uses a number only while it names
// its own file: a lost wake pipe is made again and a lost socket bound again, so both flushes
// still work.
TEST(ShimSafety, DescriptorsTheProgramClosedAndReusedAreLeftToIt) {
  const std::string directory = short_temp_dir();
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"}, {"VRAMSHIM_SOCKET", directory + "/control.sock"}};
  const ProgramRun run = run_program({program("reused_descriptors"), directory}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GE(figure(run.out, "descriptors"), 2) << "the wake-up pipe and the socket; " << run.out;
  EXPECT_EQ(figure(run.out, "intact"), 1) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "child_ok"), 1) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "signal_flush"), 1) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "socket_flush"), 1) << run.out << run.err;
  // Idle for a second: a thread polling a file that is always readable spins for all of it.
  EXPECT_LT(figure(run.out, "cpu_ms"), 500) << run.out;
  // Nothing written into the program's files at exit either.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().filename().string().rfind("file", 0) != 0) continue;
    ++files;
    std::ifstream in(entry.path());
    const std::string content((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(content, "the program's own data, which nobody else reads or writes\n")
        << entry.path();
  }
  EXPECT_EQ(files, static_cast<size_t>(figure(run.out, "descriptors")));
  EXPECT_NE(run.err.find("the program closed descriptor"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace vramshim::testing
