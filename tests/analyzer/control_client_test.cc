// ask(), require_ok() and live_sockets() against processes whose answers or sockets are hostile:
// each gets a clear error of its own, never a crash, a hang or unbounded memory.
#include "analyzer/control/control_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/analyzer/handed_over_socket.h"
#include "tests/analyzer/scripted_shim.h"

namespace vramshim::cli {
namespace {

using testing::HandedOverSocket;
using testing::ScriptedShim;

// Local users the tests act as when run as root (any uid will do: none needs an account).
constexpr uid_t kAlice = 4243;
constexpr uid_t kBob = 4244;

// A non-blocking listener at `path`, or -1.
int listening_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 8) != 0) {
    return -1;
  }
  return fd;
}

// The socket of `pid` in `directory`, as the CLI finds and checks it for `owner`.
SocketEntry found(const std::string& directory, pid_t pid, uid_t owner = ::geteuid()) {
  std::string refused;
  const std::optional<SocketEntry> socket =
      SocketDirectory(directory, owner).socket_of(pid, &refused);
  if (!socket)
    throw std::runtime_error("no trusted socket of pid " + std::to_string(pid) + ": " + refused);
  return *socket;
}

// `levels` arrays nested in one another, inside an answer's "devices".
std::string nested_answer(size_t levels) {
  return R"({"ok":true,"devices":)" + std::string(levels, '[') + std::string(levels, ']') + "}";
}

// What ask() threw, or "answered".
std::string ask_failure(const SocketEntry& socket, int timeout_ms) {
  try {
    ask(socket, "stats", timeout_ms);
    return "answered";
  } catch (const std::exception& e) {
    return e.what();
  }
}

class ControlClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vramshim-client-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + directory_).c_str()); }

  SocketEntry socket_of(const ScriptedShim& shim) const { return found(directory_, shim.pid()); }

  std::string directory_;
};

// A directory holding more names of sockets than any user runs processes (stale ones, or made by
// mknod) is listed up to a bound, with one line saying so: a listing costs neither unbounded time
// nor memory.
TEST_F(ControlClientTest, ADirectoryIsListedUpToItsBound) {
  ASSERT_EQ(::chmod(directory_.c_str(), 0700), 0);
  const size_t made = SocketDirectory::kMaxListed + 100;
  for (size_t pid = 1; pid <= made; ++pid) {
    const std::string path = directory_ + "/" + std::to_string(pid) + ".sock";
    ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0) << path;
  }
  std::vector<std::string> refused;
  const std::vector<SocketEntry> listed = SocketDirectory(directory_).sockets(&refused);
  EXPECT_EQ(listed.size(), SocketDirectory::kMaxListed);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0], directory_ + " holds more than 4096 sockets; the others in it");
}

// Stale sockets (their processes killed by SIGKILL) past the listing's bound, and a process
// running: live_sockets() (ps) removes them all, listing again while it removes some, so that they
// can hide no live process; the listing is not left cut.
TEST_F(ControlClientTest, LiveSocketsRemovesStaleSocketsPastTheListingsBound) {
  ASSERT_EQ(::chmod(directory_.c_str(), 0700), 0);
  ScriptedShim shim(directory_, {{"stats", R"({"ok":true})"}});
  const size_t stale = SocketDirectory::kMaxListed + 100;
  for (size_t pid = 1; pid <= stale + 1; ++pid) {
    if (static_cast<pid_t>(pid) == shim.pid()) continue;
    const std::string path = directory_ + "/" + std::to_string(pid) + ".sock";
    ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0) << path;
  }
  bool cut = false;
  const std::vector<SocketEntry> live = live_sockets({directory_}, &cut);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].pid, shim.pid());
  EXPECT_FALSE(cut);
  std::vector<std::string> refused;
  EXPECT_EQ(SocketDirectory(directory_).sockets(&refused).size(), 1u) << "stale sockets stay";
}

// More names PID.sock than are listed, none of them a socket: live_sockets() says its listing was
// cut (ps then does not say that no process runs).
TEST_F(ControlClientTest, LiveSocketsSaysWhenItsListingStaysCut) {
  ASSERT_EQ(::chmod(directory_.c_str(), 0700), 0);
  for (size_t pid = 1; pid <= SocketDirectory::kMaxListed + 1; ++pid) {
    const std::string path = directory_ + "/" + std::to_string(pid) + ".sock";
    ASSERT_EQ(::mknod(path.c_str(), S_IFREG | 0600, 0), 0) << path;
  }
  ::testing::internal::CaptureStderr();
  bool cut = false;
  EXPECT_TRUE(live_sockets({directory_}, &cut).empty());
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(cut);
}

// A stale socket replaced at its name after it was listed (its owner racing root's removal) is
// not removed: only the file that was checked is.
TEST_F(ControlClientTest, ASocketReplacedAfterItWasListedIsNotRemoved) {
  ASSERT_EQ(::chmod(directory_.c_str(), 0700), 0);
  const std::string path = directory_ + "/999999.sock";
  ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0);
  const SocketDirectory directory(directory_);
  const SocketEntry listed = found(directory_, 999999);
  ASSERT_EQ(::rename(path.c_str(), (directory_ + "/kept").c_str()), 0);
  ASSERT_EQ(::mknod(path.c_str(), S_IFSOCK | 0600, 0), 0);
  EXPECT_FALSE(remove_if_stale(directory, listed));
  struct stat info;
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << "the replacement was removed";
  EXPECT_TRUE(remove_if_stale(directory, found(directory_, 999999)));
  EXPECT_NE(::lstat(path.c_str(), &info), 0);
}

TEST_F(ControlClientTest, RequireOkRefusesAnOkOrAnErrorOfAnotherType) {
  for (const char* answer : {R"({"ok":1})", R"({"ok":"true"})", R"({"ok":false,"error":7})"}) {
    ScriptedShim shim(directory_, {{"stats", answer}});
    const std::string pid = std::to_string(shim.pid());
    const nlohmann::json parsed = ask(socket_of(shim), "stats");
    try {
      require_ok(parsed, shim.pid());
      ADD_FAILURE() << answer << " taken for a success";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("pid " + pid + ": ", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << answer << ": not a clear error: " << e.what();
    }
  }
}

TEST_F(ControlClientTest, AnErrorReachesTheTerminalWithoutItsControlCharacters) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":false,"error":"gone\u001b]0;owned\u0007"})"}});
  try {
    require_ok(ask(socket_of(shim), "stats"), shim.pid());
    ADD_FAILURE() << "an error taken for a success";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "pid " + std::to_string(shim.pid()) + ": gone?]0;owned?");
  }
}

TEST_F(ControlClientTest, AskRefusesAnAnswerLongerThanTheLimit) {
  // Valid JSON, but 17 MiB before its newline: refused as soon as 16 MiB came.
  ScriptedShim shim(directory_, {{"stats", std::string(size_t{17} << 20, ' ') + R"({"ok":true})"}});
  EXPECT_EQ(ask_failure(socket_of(shim), 10000),
            shim.path() + ": the answer is longer than 16 MiB");
  ScriptedShim within(directory_,
                      {{"stats", std::string(size_t{1} << 20, ' ') + R"({"ok":true})"}});
  EXPECT_EQ(ask(socket_of(within), "stats")["ok"], true);
}

TEST_F(ControlClientTest, AskRefusesAnAnswerNestedTooDeeply) {
  // The top-level object and 63 arrays: the deepest accepted.
  ScriptedShim deepest(directory_, {{"stats", nested_answer(63)}});
  EXPECT_EQ(ask(socket_of(deepest), "stats")["ok"], true);
  for (const size_t levels : {size_t{64}, size_t{200000}}) {
    ScriptedShim shim(directory_, {{"stats", nested_answer(levels)}});
    EXPECT_EQ(ask_failure(socket_of(shim), 10000),
              shim.path() + ": the answer is nested deeper than 64 levels")
        << levels;
  }
}

TEST_F(ControlClientTest, AskGivesUpOnAFullBacklogWithinItsTimeout) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":true})"}});
  shim.stop_with_full_backlog();
  const auto start = std::chrono::steady_clock::now();
  std::future<std::string> failure =
      std::async(std::launch::async, [&] { return ask_failure(socket_of(shim), 300); });
  if (failure.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "ask() still waits to connect after 5 s";
    ::kill(shim.pid(), SIGKILL);  // refuses the connection: ask() returns
  }
  EXPECT_EQ(failure.get(), "cannot connect to " + shim.path() +
                               ": the process accepted no connection within 300 ms (stopped?)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(ControlClientTest, LiveSocketsKeepsAStoppedProcessWithoutWaitingForIt) {
  ScriptedShim shim(directory_, {{"stats", R"({"ok":true})"}});
  shim.stop_with_full_backlog();
  std::future<std::vector<SocketEntry>> live =
      std::async(std::launch::async, [&] { return live_sockets({directory_}); });
  if (live.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "live_sockets() still waits to connect after 5 s";
    ::kill(shim.pid(), SIGKILL);
  }
  const std::vector<SocketEntry> sockets = live.get();
  ASSERT_EQ(sockets.size(), 1u);
  EXPECT_EQ(sockets[0].pid, shim.pid());
}

// SO_PEERCRED names the process that called listen(), even once it has exited and another process
// serves the socket (and the pid may be another user's process by then): refused.
TEST_F(ControlClientTest, AskRefusesASocketWhoseListenerHasExited) {
  const HandedOverSocket forged(directory_, R"({"ok":true,"devices":[]})");
  EXPECT_EQ(ask_failure(found(directory_, forged.listener()), 10000),
            forged.path() + ": pid " + std::to_string(forged.listener()) +
                ", which listened on it, has exited (another process serves it); not trusted");
}

// A process that listened as one uid and runs as another since (it changed its effective uid) is
// no longer a process of the socket's owner: refused.
TEST_F(ControlClientTest, AskRefusesAListenerThatRunsAsAnotherUidSince) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change uids";
  ASSERT_EQ(::chmod(directory_.c_str(), 0711), 0);
  const std::string sockets = directory_ + "/alice";
  ASSERT_EQ(::mkdir(sockets.c_str(), 0700), 0);
  ASSERT_EQ(::chown(sockets.c_str(), kAlice, kAlice), 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t server = ::fork();
  if (server == 0) {
    // Listens as alice, then serves as bob (the real and saved uids stay root's).
    if (::setresuid(-1, kAlice, -1) != 0) _exit(120);
    const int listener = listening_socket(sockets + "/" + std::to_string(::getpid()) + ".sock");
    if (listener < 0 || ::setresuid(-1, 0, -1) != 0 || ::setresuid(-1, kBob, -1) != 0 ||
        ::write(ready[1], "r", 1) != 1) {
      _exit(121);
    }
    for (;;) {
      const int client = ::accept(listener, nullptr, nullptr);
      if (client < 0) continue;
      ssize_t ignored = ::write(client, "{\"ok\":true}\n", 12);
      (void)ignored;
      ::close(client);
    }
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  const SocketEntry socket = found(sockets, server, kAlice);
  EXPECT_EQ(ask_failure(socket, 10000), socket.path + ": pid " + std::to_string(server) +
                                            " runs as uid " + std::to_string(kBob) + ", not " +
                                            std::to_string(kAlice) + "; not trusted");
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
}

// Whoever may write a socket's directory (its owner, for root) may swap the socket for a link to
// any socket on the host, or the directory for a link to another one, between the check and the
// connection: the socket that was checked is connected to, or none.
TEST_F(ControlClientTest, AskConnectsOnlyToTheSocketThatWasChecked) {
  const std::string sockets = directory_ + "/sockets";
  const std::string elsewhere = directory_ + "/elsewhere";
  ASSERT_EQ(::mkdir(sockets.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  ScriptedShim shim(sockets, {{"stats", R"({"ok":true})"}});
  const SocketEntry checked = found(sockets, shim.pid());
  // A listener no one should reach through the shim's socket, under the same name elsewhere.
  const std::string name = std::to_string(shim.pid()) + ".sock";
  const int victim = listening_socket(elsewhere + "/" + name);
  ASSERT_GE(victim, 0);
  const std::string moved = directory_ + "/moved";
  const std::string replaced =
      checked.path + " is no longer the socket that was checked; not trusted";

  ASSERT_EQ(::rename(checked.path.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink((elsewhere + "/" + name).c_str(), checked.path.c_str()), 0);
  EXPECT_EQ(ask_failure(checked, 1000), replaced) << "the socket swapped for a link";

  ASSERT_EQ(::rename(moved.c_str(), checked.path.c_str()), 0);  // the socket back in place
  ASSERT_EQ(::rename(sockets.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), sockets.c_str()), 0);
  EXPECT_EQ(ask_failure(checked, 1000), replaced) << "the directory swapped for a link";

  EXPECT_LT(::accept(victim, nullptr, nullptr), 0) << "the other listener was connected to";
  EXPECT_EQ(errno, EAGAIN);
  ::close(victim);
  ASSERT_EQ(::unlink(sockets.c_str()), 0);
  ASSERT_EQ(::rename(moved.c_str(), sockets.c_str()), 0);
  EXPECT_EQ(ask(checked, "stats")["ok"], true) << "the checked socket, still served";
}

}  // namespace
}  // namespace vramshim::cli
