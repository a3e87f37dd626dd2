// The control socket, served by a ControlThread in this process with a fake command handler.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shim/control/control_thread.h"
#include "shim/control/listening_socket.h"
#include "tests/control/fake_handler.h"

namespace vramshim::control {
namespace {

using nlohmann::json;

int connect_to(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early (oversized requests)
    sent += static_cast<size_t>(n);
  }
}

// Reads up to the first newline or the end of the stream (a reset after the answer counts as the
// end).
std::string read_line(int fd) {
  std::string received;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
    if (received.find('\n') != std::string::npos) break;
  }
  return received;
}

std::string ask(const std::string& path, std::string_view request) {
  const int fd = connect_to(path);
  if (fd < 0) return "(no connection)";
  send_all(fd, request);
  std::string answer = read_line(fd);
  ::close(fd);
  return answer;
}

class SocketServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/vramshim-socket-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    runtime_dir_ = pattern;
    config_.runtime_dir = runtime_dir_;
    config_.flush_signal = 0;
    config_.report_signal = 0;
  }
  void TearDown() override {
    control_.stop();
    std::system(("rm -rf " + runtime_dir_).c_str());
  }
  void start() {
    ASSERT_TRUE(control_.start(config_, handler_));
    path_ = control_.socket_path();
    ASSERT_FALSE(path_.empty());
  }

  std::string runtime_dir_;
  Config config_;
  testing::FakeHandler handler_;
  ControlThread control_;
  std::string path_;
};

TEST_F(SocketServerTest, DefaultPathInAPrivateDirectoryWithPrivateModes) {
  start();
  EXPECT_EQ(path_, runtime_dir_ + "/vramshim/" + std::to_string(::getpid()) + ".sock");
  struct stat directory, socket;
  ASSERT_EQ(::stat((runtime_dir_ + "/vramshim").c_str(), &directory), 0);
  ASSERT_EQ(::stat(path_.c_str(), &socket), 0);
  EXPECT_EQ(directory.st_mode & 07777, 0700u);
  EXPECT_TRUE(S_ISSOCK(socket.st_mode));
  EXPECT_EQ(socket.st_mode & 07777, 0600u);
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["pid"], ::getpid());
}

TEST_F(SocketServerTest, EveryRequestIsAnswered) {
  start();
  EXPECT_EQ(json::parse(ask(path_, "stats\n"))["devices"][0]["cached_bytes"], 64 << 20);
  EXPECT_EQ(json::parse(ask(path_, "flush\n"))["released_bytes"], 64 << 20);
  EXPECT_EQ(json::parse(ask(path_, "trim 0\n"))["released_bytes"], 0);
  EXPECT_EQ(json::parse(ask(path_, "limit 2G\n"))["limit_bytes"], 2ull << 30);
  const std::string report_path = runtime_dir_ + "/snap.json";
  EXPECT_EQ(json::parse(ask(path_, "report " + report_path + "\n"))["path"], report_path);
  EXPECT_EQ(::access(report_path.c_str(), R_OK), 0);
  EXPECT_EQ(json::parse(ask(path_, "what\n"))["error"], "unknown request: what");
  // No newline: the end of the stream ends the request.
  const int fd = connect_to(path_);
  send_all(fd, "ping");
  ::shutdown(fd, SHUT_WR);
  EXPECT_EQ(json::parse(read_line(fd))["ok"], true);
  ::close(fd);
}

TEST_F(SocketServerTest, SocketFileIsRemovedAtStop) {
  start();
  control_.stop();
  EXPECT_NE(::access(path_.c_str(), F_OK), 0);
}

// Where the socket goes when the XDG directory is refused: the private /tmp one.
std::string fallback_socket_path() {
  return "/tmp/vramshim-" + std::to_string(::geteuid()) + "/" + std::to_string(::getpid()) +
         ".sock";
}

TEST_F(SocketServerTest, RefusesADirectoryOpenToOthersAndFallsBackToTmp) {
  ASSERT_EQ(::mkdir((runtime_dir_ + "/vramshim").c_str(), 0755), 0);
  ::chmod((runtime_dir_ + "/vramshim").c_str(), 0755);
  ASSERT_TRUE(control_.start(config_, handler_));
  EXPECT_EQ(control_.socket_path(), fallback_socket_path());
}

TEST_F(SocketServerTest, RefusesADirectoryOfAnotherUserAndFallsBackToTmp) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the directory away";
  ASSERT_EQ(::mkdir((runtime_dir_ + "/vramshim").c_str(), 0700), 0);
  ASSERT_EQ(::chown((runtime_dir_ + "/vramshim").c_str(), 65534, 65534), 0);
  ASSERT_TRUE(control_.start(config_, handler_));
  EXPECT_EQ(control_.socket_path(), fallback_socket_path());
}

TEST_F(SocketServerTest, ExplicitPathAndALiveSocketIsNotStolen) {
  config_.socket_path = runtime_dir_ + "/job.sock";
  start();
  EXPECT_EQ(path_, runtime_dir_ + "/job.sock");
  ControlThread second;
  testing::FakeHandler other;
  ASSERT_TRUE(second.start(config_, other));
  EXPECT_EQ(second.socket_path(), "");
  second.stop();
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["ok"], true);
}

// A listener that accepts nothing, its queue full (a stopped or hung process): the socket is in
// use, said at once. A blocking connect to it waited forever, and every thread's first CUDA call
// with it.
TEST_F(SocketServerTest, ASocketWhoseListenerAcceptsNothingIsInUseAndNoWait) {
  config_.socket_path = runtime_dir_ + "/hung.sock";
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", config_.socket_path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  std::vector<int> queued;
  for (int i = 0; i < 64; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      break;
    }
    queued.push_back(fd);
  }
  std::atomic<bool> returned{false};
  std::thread starting([&] {
    ASSERT_TRUE(control_.start(config_, handler_));
    EXPECT_EQ(control_.socket_path(), "");  // not taken from its listener
    returned.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!returned.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!returned.load()) {
    ADD_FAILURE() << "the start waited for a listener that accepts nothing";
    std::_Exit(1);  // the thread cannot be joined
  }
  starting.join();
  for (int fd : queued) ::close(fd);
  ::close(listener);
}

// Runs `request` as uid/gid 65534 in a child process; returns its answer, or "connect failed".
std::string ask_as_nobody(const std::string& path, const std::string& request) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "no pipe";
  const pid_t child = ::fork();
  if (child == 0) {
    // Only system calls from here on: the parent has other threads.
    ::close(pipe_fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      _exit(2);
    }
    const int fd = connect_to(path);
    if (fd < 0) {
      static const char kFailed[] = "connect failed";
      ssize_t ignored = ::write(pipe_fds[1], kFailed, sizeof(kFailed) - 1);
      (void)ignored;
      _exit(0);
    }
    // The server may refuse and close before the request is sent: no SIGPIPE for that.
    ssize_t ignored = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) ignored = ::write(pipe_fds[1], buffer, static_cast<size_t>(n));
    (void)ignored;
    _exit(0);
  }
  ::close(pipe_fds[1]);
  std::string answer = read_line(pipe_fds[0]);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return answer;
}

// ps and the exporter take a socket file that refuses connections for a dead process's and remove
// it: the file was there a few calls before the socket listened. It now appears at its name only
// once it accepts. A watcher connects whenever the file is there while sockets open and close;
// only refusals seen from first to last while a socket was opening count (a closing socket's file
// refuses until it is removed).
TEST_F(SocketServerTest, TheSocketFileAppearsOnlyOnceItAccepts) {
  const std::string path = runtime_dir_ + "/1.sock";
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  std::atomic<int> opening{0};  // the socket being opened, 0 while none is
  std::atomic<bool> done{false};
  std::atomic<int> refused_while_opening{0};
  std::thread watcher([&] {
    while (!done.load()) {
      const int before = opening.load();
      struct stat info;
      if (before == 0 || ::lstat(path.c_str(), &info) != 0) continue;
      // Without waiting: a full backlog is EAGAIN, never a refusal.
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      const bool refused =
          ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 &&
          errno == ECONNREFUSED;
      ::close(fd);
      if (refused && opening.load() == before) ++refused_while_opening;
    }
  });
  for (int i = 1; i <= 2000 && refused_while_opening.load() == 0; ++i) {
    opening = i;
    std::string error;
    std::unique_ptr<ListeningSocket> socket = ListeningSocket::open(path, &error);
    opening = 0;
    ASSERT_NE(socket, nullptr) << error;
  }
  done = true;
  watcher.join();
  EXPECT_EQ(refused_while_opening.load(), 0);
}

TEST_F(SocketServerTest, AnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as uid 65534";
  start();
  // With the modes as created, the other uid cannot even reach the socket.
  EXPECT_EQ(ask_as_nobody(path_, "ping\n"), "connect failed");
  // Opened up by hand, it reaches it, and the peer credential check refuses it.
  ::chmod(runtime_dir_.c_str(), 0755);
  ::chmod((runtime_dir_ + "/vramshim").c_str(), 0755);
  ::chmod(path_.c_str(), 0666);
  EXPECT_EQ(ask_as_nobody(path_, "flush\n"), "{\"ok\":false,\"error\":\"permission denied\"}\n");
  EXPECT_EQ(handler_.flushes_by_socket, 0);
}

TEST_F(SocketServerTest, RequestLengthLimit) {
  start();
  const std::string at_limit = "trim " + std::string(4091, '0');
  ASSERT_EQ(at_limit.size(), 4096u);
  EXPECT_EQ(json::parse(ask(path_, at_limit + "\n"))["ok"], true);
  const json too_long = json::parse(ask(path_, at_limit + "0\n"));
  EXPECT_EQ(too_long["error"], "request longer than 4096 bytes");
  // A CRLF line end is no part of the request.
  EXPECT_EQ(json::parse(ask(path_, at_limit + "\r\n"))["ok"], true);
  EXPECT_EQ(json::parse(ask(path_, at_limit + "0\r\n"))["error"], "request longer than 4096 bytes");
  const json huge = json::parse(ask(path_, std::string(1 << 20, 'x')));
  EXPECT_EQ(huge["error"], "request longer than 4096 bytes");
}

TEST_F(SocketServerTest, SilentClientDoesNotBlockTheNext) {
  start();
  const int silent = connect_to(path_);
  ASSERT_GE(silent, 0);
  // The next client is served while the silent one is still waiting for its answer.
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["ok"], true);
  pollfd pending{silent, POLLIN, 0};
  EXPECT_EQ(::poll(&pending, 1, 0), 0);
  // The silent one is told off once its time limit runs out.
  EXPECT_EQ(json::parse(read_line(silent))["error"], "timed out waiting for a request line");
  ::close(silent);
}

TEST_F(SocketServerTest, AClientReadingItsAnswerSlowlyLosesItRatherThanHoldTheThread) {
  handler_.stats_padding_bytes = 8 << 20;
  start();
  const int slow = connect_to(path_);
  ASSERT_GE(slow, 0);
  send_all(slow, "stats\n");
  // All that came, every 300 ms: each drain makes room before a 500 ms wait for it ends, so only a
  // limit on the whole answer stops the server from sending all 8 MiB, holding the thread seconds.
  size_t received = 0;
  bool whole = false;
  bool closed = false;
  std::vector<char> buffer(1 << 20);
  while (!whole && !closed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (;;) {
      const ssize_t n = ::recv(slow, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        closed = true;
        break;
      }
      received += static_cast<size_t>(n);
      if (std::memchr(buffer.data(), '\n', static_cast<size_t>(n)) != nullptr) {
        whole = true;
        break;
      }
    }
  }
  ::close(slow);
  EXPECT_FALSE(whole) << received << " bytes, the whole answer";
  EXPECT_LT(received, size_t{8} << 20);
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["ok"], true);
}

// Answers that do not fit the clients' socket buffers, to clients that never read them: the
// others are served meanwhile, not after each of them waited out its time in turn. (Four of them:
// building their answers takes well under the 500 ms each may wait, even under a sanitizer.)
TEST_F(SocketServerTest, ClientsNotReadingTheirAnswersDoNotHoldUpTheOthers) {
  handler_.stats_padding_bytes = 512 << 10;
  start();
  constexpr int kSlow = 4;
  std::vector<int> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(connect_to(path_));
    ASSERT_GE(slow.back(), 0);
    send_all(slow.back(), "stats\n");
  }
  // Each slow answer has begun: some of it waits in the client's buffer.
  for (int fd : slow) {
    pollfd readable{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&readable, 1, 10000), 1);
  }
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["ok"], true);
  // Answered before the slow clients' time ran out: the server has not given up on them all.
  // (Sending each slow answer in turn, it would have closed every one of them first.)
  int given_up = 0;
  for (int fd : slow) {
    pollfd closed{fd, POLLRDHUP, 0};
    if (::poll(&closed, 1, 0) == 1 && (closed.revents & POLLRDHUP) != 0) ++given_up;
  }
  EXPECT_LT(given_up, kSlow);
  for (int fd : slow) ::close(fd);
}

// The time to send an answer starts when it is ready, not when its request came.
TEST_F(SocketServerTest, AnAnswerSlowToBuildStillGetsItsTimeToBeSent) {
  handler_.stats_padding_bytes = 1 << 20;
  handler_.stats_delay_ms = 600;
  start();
  const std::string answer = ask(path_, "stats\n");
  ASSERT_FALSE(answer.empty());
  EXPECT_EQ(answer.back(), '\n') << answer.size() << " bytes";
  EXPECT_EQ(json::parse(answer)["ok"], true);
}

TEST_F(SocketServerTest, ManyClientsAtOnce) {
  start();
  std::atomic<int> valid{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 24; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        const json answer = json::parse(ask(path_, "stats\n"), nullptr, false);
        if (!answer.is_discarded() && answer["ok"] == true) ++valid;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(valid, 24 * 20);
}

// Thousands of hostile clients: random bytes, oversized, partial, slow, or gone before the answer.
TEST_F(SocketServerTest, SurvivesHostileClientsAndAlwaysAnswersValidJson) {
  start();
  std::atomic<int> answers{0};
  std::atomic<int> invalid{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 random(1000 + t);
      // No "report": a random path would write files.
      const char* words[] = {"ping", "stats", "flush", "trim", "limit", "off", "G", " ", "\t"};
      for (int i = 0; i < 400; ++i) {
        std::string request;
        const int shape = static_cast<int>(random() % 6);
        if (shape == 0) {  // random bytes
          request.resize(random() % 200);
          for (char& c : request) c = static_cast<char>(random());
        } else if (shape == 1) {  // oversized
          request.assign(4000 + random() % 8000, static_cast<char>('a' + random() % 26));
        } else {  // word salad
          for (int w = 0, n = 1 + static_cast<int>(random() % 4); w < n; ++w) {
            request += words[random() % 9];
            request += ' ';
            if (random() % 3 == 0) request += std::to_string(random());
          }
          if (random() % 2 == 0) request = request.substr(0, random() % (request.size() + 1));
        }
        if (shape != 1 && random() % 4 != 0) request += '\n';
        const int fd = connect_to(path_);
        if (fd < 0) continue;
        const int ending = static_cast<int>(random() % 10);
        if (ending == 0) {  // slow: dribbled out
          for (char c : request.substr(0, 20)) {
            send_all(fd, std::string_view(&c, 1));
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
          send_all(fd, "\n");
        } else {
          send_all(fd, request);
        }
        if (ending == 1) {  // gone before the answer
          ::close(fd);
          continue;
        }
        ::shutdown(fd, SHUT_WR);
        const std::string answer = read_line(fd);
        ::close(fd);
        if (answer.empty()) continue;  // nothing was sent: nothing to answer
        ++answers;
        const json parsed = json::parse(answer, nullptr, false);
        if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("ok") ||
            answer.back() != '\n') {
          ++invalid;
          ADD_FAILURE() << "invalid answer: " << answer;
        }
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_GT(answers, 2500);
  EXPECT_EQ(invalid, 0);
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["ok"], true);
}

TEST_F(SocketServerTest, TicksRunOnTheControlThread) {
  start();
  for (int i = 0; i < 100 && handler_.ticks < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(handler_.ticks, 3);
}

TEST_F(SocketServerTest, ForkedChildLeavesTheParentsSocketAlone) {
  start();
  const pid_t child = ::fork();
  if (child == 0) {
    control_.reset_after_fork_in_child();
    const bool clean = !control_.running() && control_.socket_path().empty();
    control_.stop();
    _exit(clean ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(::access(path_.c_str(), F_OK), 0);
  EXPECT_EQ(json::parse(ask(path_, "ping\n"))["pid"], ::getpid());
}

}  // namespace
}  // namespace vramshim::control
