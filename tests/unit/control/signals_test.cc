// The flush and report signals: installed only over the default disposition, and acted on by the
// control thread.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "shim/control/control_signals.h"
#include "shim/control/control_thread.h"
#include "shim/control/wake_pipe.h"
#include "tests/control/fake_handler.h"

namespace vramshim::control {
namespace {

volatile sig_atomic_t g_application_handler_calls = 0;
void application_handler(int) { g_application_handler_calls = g_application_handler_calls + 1; }

bool disposition_is_default(int signal_number) {
  struct sigaction current;
  sigaction(signal_number, nullptr, &current);
  return (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
}

void set_disposition(int signal_number, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
}

template <typename Condition>
bool eventually(Condition condition) {
  for (int i = 0; i < 200; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

class SignalsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    disconnect_control_signals();
    take_signal_requests();
    set_disposition(SIGUSR1, SIG_DFL);
    set_disposition(SIGUSR2, SIG_DFL);
  }
};

TEST_F(SignalsTest, InstalledOverTheDefaultAndOnlyRecordsAndWakes) {
  WakePipe wake;
  ASSERT_TRUE(create_wake_pipe(&wake));
  const SignalInstallation installed = install_control_signals(SIGUSR1, SIGUSR2, &wake.write_end);
  EXPECT_TRUE(installed.flush);
  EXPECT_TRUE(installed.report);
  EXPECT_FALSE(disposition_is_default(SIGUSR1));

  ::raise(SIGUSR1);
  EXPECT_EQ(take_signal_requests(), kFlushRequested);
  ::raise(SIGUSR2);
  ::raise(SIGUSR1);
  EXPECT_EQ(take_signal_requests(), kFlushRequested | kReportRequested);
  EXPECT_EQ(take_signal_requests(), 0u);
  char wakes[8];
  EXPECT_EQ(::read(wake.read_end.fd(), wakes, sizeof(wakes)), 3);
  wake.read_end.close();
  wake.write_end.close();
}

TEST_F(SignalsTest, NoneInstallsNothing) {
  WakePipe wake;
  ASSERT_TRUE(create_wake_pipe(&wake));
  const SignalInstallation installed = install_control_signals(0, 0, &wake.write_end);
  EXPECT_FALSE(installed.flush);
  EXPECT_FALSE(installed.report);
  EXPECT_TRUE(disposition_is_default(SIGUSR1));
  EXPECT_TRUE(disposition_is_default(SIGUSR2));
  wake.read_end.close();
  wake.write_end.close();
}

TEST_F(SignalsTest, TheApplicationsHandlerAndIgnoreAreKept) {
  set_disposition(SIGUSR1, &application_handler);
  set_disposition(SIGUSR2, SIG_IGN);
  WakePipe wake;
  ASSERT_TRUE(create_wake_pipe(&wake));
  const SignalInstallation installed = install_control_signals(SIGUSR1, SIGUSR2, &wake.write_end);
  EXPECT_FALSE(installed.flush);
  EXPECT_FALSE(installed.report);
  g_application_handler_calls = 0;
  ::raise(SIGUSR1);
  ::raise(SIGUSR2);
  EXPECT_EQ(g_application_handler_calls, 1);
  EXPECT_EQ(take_signal_requests(), 0u);
  wake.read_end.close();
  wake.write_end.close();
}

TEST_F(SignalsTest, OneSignalForBothDoesBoth) {
  WakePipe wake;
  ASSERT_TRUE(create_wake_pipe(&wake));
  const SignalInstallation installed = install_control_signals(SIGUSR2, SIGUSR2, &wake.write_end);
  EXPECT_TRUE(installed.flush && installed.report);
  EXPECT_TRUE(disposition_is_default(SIGUSR1));
  ::raise(SIGUSR2);
  EXPECT_EQ(take_signal_requests(), kFlushRequested | kReportRequested);
  wake.read_end.close();
  wake.write_end.close();
}

class ControlThreadSignalsTest : public SignalsTest {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vramshim-signals-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
    config_.socket_path = directory_ + "/control.sock";
    handler_.set_report_pattern(directory_ + "/report.json");
  }
  void TearDown() override {
    control_.stop();
    SignalsTest::TearDown();
    std::system(("rm -rf " + directory_).c_str());
  }

  std::string directory_;
  Config config_;
  testing::FakeHandler handler_;
  ControlThread control_;
};

TEST_F(ControlThreadSignalsTest, SignalsFlushAndReportOnTheControlThread) {
  ASSERT_TRUE(control_.start(config_, handler_));
  ::kill(::getpid(), SIGUSR1);
  EXPECT_TRUE(eventually([&] { return handler_.flushes_by_signal == 1; }));
  EXPECT_EQ(handler_.cached_bytes, 0u);
  ::kill(::getpid(), SIGUSR2);
  EXPECT_TRUE(eventually([&] { return handler_.reports_by_signal == 1; }));
  EXPECT_EQ(::access((directory_ + "/report.json").c_str(), R_OK), 0);
}

TEST_F(ControlThreadSignalsTest, AnApplicationHandlerIsKeptAndTheSocketStillFlushes) {
  set_disposition(SIGUSR1, &application_handler);
  g_application_handler_calls = 0;
  ASSERT_TRUE(control_.start(config_, handler_));
  ::kill(::getpid(), SIGUSR1);
  EXPECT_TRUE(eventually([&] { return g_application_handler_calls == 1; }));
  EXPECT_EQ(handler_.flushes_by_signal, 0);

  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", config_.socket_path.c_str());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::write(fd, "flush\n", 6), 6);
  char answer[256] = {};
  EXPECT_GT(::read(fd, answer, sizeof(answer) - 1), 0);
  ::close(fd);
  EXPECT_EQ(std::string(answer), "{\"ok\":true,\"released_bytes\":67108864}\n");
  EXPECT_EQ(handler_.flushes_by_socket, 1);
}

TEST_F(ControlThreadSignalsTest, FlushSignalNoneLeavesTheDispositionAlone) {
  config_.flush_signal = 0;
  config_.report_signal = 0;
  ASSERT_TRUE(control_.start(config_, handler_));
  EXPECT_TRUE(disposition_is_default(SIGUSR1));
  EXPECT_TRUE(disposition_is_default(SIGUSR2));
}

}  // namespace
}  // namespace vramshim::control
