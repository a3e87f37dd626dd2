// find_other_processes against real processes serving control sockets: trusted ones, impostors,
// untrusted places, silent ones. This test program loads no CUDA driver, so NVML is never asked.
#include "shim/oom/other_processes.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/oom/child_processes.h"

namespace vramshim::oom {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcesses;
using testing::TemporaryDirectory;

// Another local user (nobody).
constexpr uid_t kOtherUid = 65534;

// A Unix socket bound at `path`, listening if asked; never accepts. -1 on failure.
int bound_socket(const std::string& path, bool listening) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      (listening && ::listen(fd, 8) != 0)) {
    return -1;
  }
  return fd;
}

bool has_note_containing(const OtherProcesses& found, const std::string& text) {
  return std::any_of(found.unasked.begin(), found.unasked.end(),
                     [&](const std::string& note) { return note.find(text) != std::string::npos; });
}

std::string all_notes(const OtherProcesses& found) {
  std::string text;
  for (const std::string& note : found.unasked) text += "\n  " + note;
  return text;
}

std::vector<pid_t> pids_of(const OtherProcesses& found) {
  std::vector<pid_t> pids;
  for (const OtherProcess& process : found.processes) pids.push_back(process.pid);
  return pids;
}

class OtherProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(temporary_.path().empty());
    sockets_ = temporary_.path() + "/sockets";
    ASSERT_EQ(::mkdir(sockets_.c_str(), 0700), 0);
  }

  OtherProcesses find(int device = 0, std::string pci_bus_id = "") {
    OtherProcessesQuery query;
    query.device = device;
    query.pci_bus_id = std::move(pci_bus_id);
    query.socket_directories = {sockets_};
    return find_other_processes(query);
  }

  TemporaryDirectory temporary_;
  std::string sockets_;
  ChildProcesses children_;
};

TEST_F(OtherProcessesTest, ListsExactlyTheTrustedOtherShimmedProcessesWithFiguresAndCommands) {
  const pid_t first = children_.start_stats_server(sockets_, {"serve", "111", "222"});
  const pid_t second =
      children_.start_stats_server(sockets_, {"serve", "333", "444", "555", "666"});
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  // An impostor: a socket named after a process that does not serve it.
  const pid_t claimed = ::getppid();
  ASSERT_GT(children_.start_stats_server(sockets_, {"serve", "7", "7"}, claimed), 0);
  // Our own socket, and one its process left behind: neither is asked, neither is worth a note.
  const int own = bound_socket(sockets_ + "/" + std::to_string(::getpid()) + ".sock", true);
  const pid_t gone = testing::dead_pid();
  const int stale = bound_socket(sockets_ + "/" + std::to_string(gone) + ".sock", false);
  ASSERT_GE(own, 0);
  ASSERT_GE(stale, 0);
  ::close(stale);
  // A file that is not a socket.
  std::ofstream(sockets_ + "/4242.sock") << "not a socket";

  const auto started = std::chrono::steady_clock::now();
  const OtherProcesses found = find();
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ::close(own);

  ASSERT_EQ(pids_of(found), (std::vector<pid_t>{std::min(first, second), std::max(first, second)}))
      << all_notes(found);
  for (const OtherProcess& process : found.processes) {
    const bool is_first = process.pid == first;
    EXPECT_EQ(process.source, "vramshim");
    EXPECT_EQ(process.in_use_bytes, is_first ? 111u : 333u);
    EXPECT_EQ(process.cached_bytes, is_first ? 222u : 444u);
    EXPECT_EQ(process.used_bytes, std::nullopt);
    const std::string socket = sockets_ + "/" + std::to_string(process.pid) + ".sock";
    EXPECT_EQ(process.command,
              "stats_server " + socket + (is_first ? " serve 111 222" : " serve 333 444 555 666"));
  }
  const std::string impostor = sockets_ + "/" + std::to_string(claimed) + ".sock";
  EXPECT_TRUE(has_note_containing(found, impostor + " is served by pid")) << all_notes(found);
  EXPECT_TRUE(has_note_containing(found, sockets_ + "/4242.sock is not a socket"))
      << all_notes(found);
  EXPECT_FALSE(has_note_containing(found, "/" + std::to_string(::getpid()) + ".sock"))
      << all_notes(found);
  EXPECT_FALSE(has_note_containing(found, "/" + std::to_string(gone) + ".sock"))
      << all_notes(found);
  EXPECT_FALSE(has_note_containing(found, "did not answer")) << all_notes(found);
  std::printf("scan of 2 shimmed processes (and an impostor): %.1f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
}

TEST_F(OtherProcessesTest, GivesTheFiguresOfTheDeviceAskedAndSkipsProcessesWithoutIt) {
  children_.start_stats_server(sockets_, {"serve", "111", "222"});
  const pid_t two_devices =
      children_.start_stats_server(sockets_, {"serve", "333", "444", "555", "666"});
  const OtherProcesses found = find(1);
  ASSERT_EQ(pids_of(found), std::vector<pid_t>{two_devices}) << all_notes(found);
  EXPECT_EQ(found.processes[0].in_use_bytes, 555u);
  EXPECT_EQ(found.processes[0].cached_bytes, 666u);
  EXPECT_FALSE(has_note_containing(found, "pid ")) << all_notes(found);
}

// Under CUDA_VISIBLE_DEVICES every rank calls its GPU device 0: a process is listed for the GPU
// its answer gives the failing device's bus id, whatever its ordinal there; an older shim's answer,
// without bus ids, is matched by ordinal.
TEST_F(OtherProcessesTest, ShimmedProcessesAreMatchedByTheDevicesBusId) {
  const pid_t elsewhere = children_.start_stats_server(
      sockets_, {"answer", R"({"ok":true,"devices":[{"device":0,"pci_bus_id":"0000:2A:00.0",)"
                           R"("in_use_bytes":536870912,"cached_bytes":0}]})"});
  const pid_t here = children_.start_stats_server(
      sockets_, {"answer", R"({"ok":true,"devices":[{"device":0,"pci_bus_id":"0000:3A:00.0",)"
                           R"("in_use_bytes":1,"cached_bytes":2},{"device":1,)"
                           R"("pci_bus_id":"0000:18:00.0","in_use_bytes":3,"cached_bytes":4}]})"});
  const pid_t older = children_.start_stats_server(sockets_, {"serve", "5", "6"});
  ASSERT_GT(elsewhere, 0);
  ASSERT_GT(here, 0);
  ASSERT_GT(older, 0);

  const OtherProcesses found = find(0, "0000:18:00.0");
  ASSERT_EQ(pids_of(found), (std::vector<pid_t>{std::min(here, older), std::max(here, older)}))
      << all_notes(found);
  for (const OtherProcess& process : found.processes) {
    EXPECT_EQ(process.in_use_bytes, process.pid == here ? 3u : 5u);
  }
}

TEST_F(OtherProcessesTest, SilentSocketsAreGivenUpTogetherWithinTheBudgetWithANote) {
  const pid_t answering = children_.start_stats_server(sockets_, {"serve", "111", "222"});
  std::vector<pid_t> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(children_.start_stats_server(sockets_, {"silent"}));
  ASSERT_GT(answering, 0);

  const auto started = std::chrono::steady_clock::now();
  const OtherProcesses found = find();
  const auto elapsed = std::chrono::steady_clock::now() - started;

  EXPECT_EQ(pids_of(found), std::vector<pid_t>{answering}) << all_notes(found);
  for (const pid_t pid : silent) {
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(has_note_containing(found, "pid " + std::to_string(pid) + " (" + sockets_ + "/" +
                                               std::to_string(pid) +
                                               ".sock) did not answer within 100 ms"))
        << all_notes(found);
  }
  // Asked at once, four silent sockets cost one socket timeout, not four: asked one after another
  // they would take at least 400 ms, which is the line (a loaded machine took 301 ms for one).
  EXPECT_GE(elapsed, milliseconds(100));
  EXPECT_LT(elapsed, milliseconds(400));
  std::printf("scan with 4 silent sockets: %.1f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
}

TEST_F(OtherProcessesTest, AnswersThatAreNotFiguresAreNoted) {
  const pid_t refusing = children_.start_stats_server(
      sockets_, {"answer", R"({"ok":false,"error":"permission denied"})"});
  const pid_t babbling = children_.start_stats_server(sockets_, {"answer", "hello"});
  const OtherProcesses found = find();
  EXPECT_TRUE(found.processes.empty());
  EXPECT_TRUE(
      has_note_containing(found, "pid " + std::to_string(refusing) + " (") &&
      has_note_containing(found, "refused stats: {\"ok\":false,\"error\":\"permission denied\"}"))
      << all_notes(found);
  EXPECT_TRUE(has_note_containing(found, "pid " + std::to_string(babbling) + " (" + sockets_ + "/" +
                                             std::to_string(babbling) +
                                             ".sock) gave an answer that is not a stats answer"))
      << all_notes(found);
}

TEST_F(OtherProcessesTest, DirectoriesThatAreNotPrivateAreNotAsked) {
  const std::string open = temporary_.path() + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0755), 0);
  const std::string link = temporary_.path() + "/link";
  ASSERT_EQ(::symlink(sockets_.c_str(), link.c_str()), 0);
  ASSERT_GT(children_.start_stats_server(open, {"serve", "1", "1"}), 0);
  ASSERT_GT(children_.start_stats_server(sockets_, {"serve", "2", "2"}), 0);

  OtherProcessesQuery query;
  query.socket_directories = {open, link, temporary_.path() + "/missing"};
  const OtherProcesses found = find_other_processes(query);
  EXPECT_TRUE(found.processes.empty()) << all_notes(found);
  EXPECT_TRUE(has_note_containing(
      found, open + " has group or other permissions; its sockets are not asked"))
      << all_notes(found);
  EXPECT_TRUE(has_note_containing(found, link + " is a symbolic link; its sockets are not asked"))
      << all_notes(found);
  EXPECT_FALSE(has_note_containing(found, "/missing")) << "a missing directory is no problem";
}

TEST_F(OtherProcessesTest, SocketsOfAnotherUserAreNotAsked) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a socket away";
  const pid_t server = children_.start_stats_server(sockets_, {"serve", "1", "1"});
  ASSERT_GT(server, 0);
  const std::string socket = sockets_ + "/" + std::to_string(server) + ".sock";
  ASSERT_EQ(::chown(socket.c_str(), kOtherUid, kOtherUid), 0);
  const OtherProcesses found = find();
  EXPECT_TRUE(found.processes.empty()) << all_notes(found);
  EXPECT_TRUE(has_note_containing(found, socket + " is owned by uid 65534, not 0; not trusted"))
      << all_notes(found);
}

}  // namespace
}  // namespace vramshim::oom
