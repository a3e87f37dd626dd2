// The fatal-signal handler: installed only over the default disposition; a crash waits for the
// control thread's report and then dies of its own signal; the control thread's own crash, a
// disconnected handler and another process sharing it never wait. Crashes run in forked children.
#include "shim/control/fatal_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>

#include "shim/control/control_thread.h"
#include "shim/control/wake_pipe.h"
#include "tests/control/fake_handler.h"

namespace vramshim::control {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

void application_handler(int) {}

void set_disposition(int signal_number, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
}

bool has_siginfo_handler(int signal_number) {
  struct sigaction current;
  sigaction(signal_number, nullptr, &current);
  return (current.sa_flags & SA_SIGINFO) != 0;
}

struct ChildEnd {
  int term_signal = 0;  // 0: it exited
  int exit_code = -1;
  double seconds = 0;
};

// Runs `body` in a forked child, then exits it with 0; how and how soon it ended.
ChildEnd run_in_child(const std::function<void()>& body) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ChildEnd end;
  end.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  end.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  end.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return end;
}

// A wake pipe for a child that never closes it.
WakePipe* new_wake_pipe() {
  auto* pipe = new WakePipe;
  if (!create_wake_pipe(pipe)) ::_exit(4);
  return pipe;
}

void write_through_null() {
  volatile int* volatile null_pointer = nullptr;
  *null_pointer = 1;
}

class FatalSignalsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    disconnect_fatal_signals();
    for (const int signal_number : kFatalSignals) set_disposition(signal_number, SIG_DFL);
  }
};

TEST_F(FatalSignalsTest, InstalledOnlyOverTheDefaultDisposition) {
  set_disposition(SIGBUS, &application_handler);
  set_disposition(SIGFPE, SIG_IGN);
  WakePipe wake;
  ASSERT_TRUE(create_wake_pipe(&wake));
  install_fatal_signals(&wake.write_end);
  EXPECT_TRUE(has_siginfo_handler(SIGSEGV));
  EXPECT_TRUE(has_siginfo_handler(SIGABRT));
  EXPECT_TRUE(has_siginfo_handler(SIGILL));
  struct sigaction bus, fpe;
  sigaction(SIGBUS, nullptr, &bus);
  sigaction(SIGFPE, nullptr, &fpe);
  EXPECT_EQ(bus.sa_handler, &application_handler);
  EXPECT_EQ(fpe.sa_handler, SIG_IGN);
  wake.read_end.close();
  wake.write_end.close();
}

TEST_F(FatalSignalsTest, ACrashWaitsForTheControlThreadsReportThenDiesOfItsOwnSignal) {
  char pattern[] = "/tmp/vramshim-fatal-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string report = std::string(pattern) + "/crash.json";
  const ChildEnd end = run_in_child([&] {
    Config config;
    config.socket_enabled = false;
    testing::FakeHandler handler;
    handler.set_report_pattern(report);
    ControlThread control;
    if (!control.start(config, handler)) ::_exit(3);
    write_through_null();
  });
  EXPECT_EQ(end.term_signal, SIGSEGV);
  EXPECT_LT(end.seconds, kCrashReportWaitMs / 1000.0);
  std::ifstream file(report);
  const std::string written((std::istreambuf_iterator<char>(file)), {});
  EXPECT_NE(written.find(R"({"reason":"crash","signal":11,"code":1,"address":0,"thread_id":)"),
            std::string::npos)
      << written;
  std::system(("rm -rf " + std::string(pattern)).c_str());
}

// The test thread's held termination signal, as the runtime keeps the hooks'.
thread_local HeldTermination t_held;

// A child with a control thread whose crash report takes FakeHandler::report_lock, where
// `in_hold` runs inside a TerminationHold; how it ended, and the report it wrote ("" for none).
struct HeldTerminationEnd {
  ChildEnd end;
  std::string report;
};
HeldTerminationEnd run_with_hold(const std::function<void(testing::FakeHandler&)>& in_hold) {
  char pattern[] = "/tmp/vramshim-fatal-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return {};
  const std::string report = std::string(pattern) + "/exit.json";
  HeldTerminationEnd result;
  result.end = run_in_child([&] {
    Config config;
    config.socket_enabled = false;
    testing::FakeHandler handler;
    handler.set_report_pattern(report);
    ControlThread control;
    if (!control.start(config, handler)) ::_exit(3);
    set_termination_holds([] { return &t_held; });
    {
      const TerminationHold hold(t_held);
      in_hold(handler);
    }
    ::_exit(5);  // the hold's end ends the process
  });
  std::ifstream file(report);
  result.report.assign(std::istreambuf_iterator<char>(file), {});
  std::system(("rm -rf " + std::string(pattern)).c_str());
  return result;
}

void terminate_this_thread() { ::syscall(SYS_tgkill, ::getpid(), ::syscall(SYS_gettid), SIGTERM); }

// A SIGTERM that lands while its thread holds a lock the report needs (inside an allocation):
// waiting in the handler, it waited out the 5 s with the lock held and the exit report was lost
// (5 of 12 runs of an allocation loop stopped by `timeout`). Held until the lock is free, the
// report is written and the process still dies of its signal.
TEST_F(FatalSignalsTest, ATerminationInsideTheShimsLocksKeepsItsReport) {
  const HeldTerminationEnd ended = run_with_hold([](testing::FakeHandler& handler) {
    const std::lock_guard<std::mutex> locked(handler.report_lock);
    terminate_this_thread();
  });
  EXPECT_EQ(ended.end.term_signal, SIGTERM);
  EXPECT_NE(ended.report.find(R"({"reason":"crash","signal":15,)"), std::string::npos)
      << ended.report;
}

// A thread that does not leave its hold (a driver call that never returns) does not keep the
// process alive: the control thread ends it with the signal, its report written.
TEST_F(FatalSignalsTest, ATerminationHeldForGoodStillEndsTheProcess) {
  const HeldTerminationEnd ended = run_with_hold([](testing::FakeHandler&) {
    terminate_this_thread();
    ::sleep(30);
  });
  EXPECT_EQ(ended.end.term_signal, SIGTERM);
  EXPECT_NE(ended.report.find(R"({"reason":"crash","signal":15,)"), std::string::npos)
      << ended.report;
}

// Inside a hold, a driver call that may wait for the device for long (a free behind long kernels)
// is made with the hold released: a SIGTERM landing during it ends the process there, its report
// written, not when the call returns (it ended 5 s late, by the control thread, while the
// program's other threads ran on). The child writes a byte past the signal if it went on.
TEST_F(FatalSignalsTest, ATerminationDuringADriverCallInsideAHoldActsAtOnce) {
  int went_on[2];
  ASSERT_EQ(::pipe(went_on), 0);
  const HeldTerminationEnd ended = run_with_hold([&](testing::FakeHandler&) {
    const TerminationRelease driver_call(t_held);
    terminate_this_thread();
    ::usleep(100 * 1000);  // a blocking call: where a sanitizer delivers a signal it deferred
    ssize_t written = ::write(went_on[1], "x", 1);
    (void)written;
    ::sleep(30);
  });
  ::close(went_on[1]);
  char byte;
  EXPECT_EQ(::read(went_on[0], &byte, 1), 0) << "the thread went on past its SIGTERM";
  ::close(went_on[0]);
  EXPECT_EQ(ended.end.term_signal, SIGTERM);
  EXPECT_NE(ended.report.find(R"({"reason":"crash","signal":15,)"), std::string::npos)
      << ended.report;
}

TEST_F(FatalSignalsTest, AFatalSignalOnTheControlThreadEndsTheProcessAtOnce) {
  const ChildEnd end = run_in_child([] {
    install_fatal_signals(&new_wake_pipe()->write_end);  // nobody would ever answer
    set_crash_reporting_thread();
    std::abort();
  });
  EXPECT_EQ(end.term_signal, SIGABRT);
  EXPECT_LT(end.seconds, kCrashReportWaitMs / 1000.0 / 2);
}

TEST_F(FatalSignalsTest, ADisconnectedHandlerOrAnotherProcessEndsAtOnce) {
  const ChildEnd disconnected = run_in_child([] {
    install_fatal_signals(&new_wake_pipe()->write_end);
    disconnect_fatal_signals();
    ::raise(SIGBUS);
  });
  EXPECT_EQ(disconnected.term_signal, SIGBUS);
  EXPECT_LT(disconnected.seconds, kCrashReportWaitMs / 1000.0 / 2);

  // A child forked without the runtime's fork handler (which disconnects): another process.
  const ChildEnd forked = run_in_child([] {
    install_fatal_signals(&new_wake_pipe()->write_end);
    const ChildEnd grandchild = run_in_child(&write_through_null);
    const bool at_once = grandchild.seconds < kCrashReportWaitMs / 1000.0 / 2;
    ::_exit(grandchild.term_signal == SIGSEGV && at_once ? 0 : 1);
  });
  EXPECT_EQ(forked.exit_code, 0);
}

TEST(FatalSignalNames, NameTheSevenAndNumberTheRest) {
  EXPECT_EQ(fatal_signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(fatal_signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(fatal_signal_name(SIGILL), "SIGILL");
  EXPECT_EQ(fatal_signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(fatal_signal_name(SIGHUP), "SIGHUP");
  EXPECT_EQ(fatal_signal_name(SIGUSR1), "signal 10");
}

}  // namespace
}  // namespace vramshim::control
