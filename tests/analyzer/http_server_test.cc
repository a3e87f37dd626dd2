// The exporter's HTTP server (analyzer/http/): what it takes as a request, and that no client can
// make it hold more than one request head per connection, wait for ever, or stop answering others.
#include "analyzer/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace vramshim::http {
namespace {

using namespace std::chrono_literals;

Request parsed(std::string_view head) {
  auto result = parse_request_head(head);
  EXPECT_TRUE(std::holds_alternative<Request>(result)) << head;
  return std::holds_alternative<Request>(result) ? std::get<Request>(result) : Request{};
}

int refused_with(std::string_view head) {
  auto result = parse_request_head(head);
  return std::holds_alternative<Refusal>(result) ? std::get<Refusal>(result).status : 0;
}

TEST(RequestHead, EndsAtTheEmptyLine) {
  EXPECT_EQ(head_length("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET"), 27u);
  EXPECT_EQ(head_length("GET / HTTP/1.1\nHost: x\n\n"), 24u);
  EXPECT_EQ(head_length("GET / HTTP/1.1\r\nHost: x\r\n"), std::nullopt);
  EXPECT_EQ(head_length(""), std::nullopt);
}

TEST(RequestHead, ReadsMethodPathVersionAndFields) {
  const Request request = parsed(
      "GET /metrics?x=1 HTTP/1.1\r\nHost: node\r\nX-Prometheus-Scrape-Timeout-Seconds:  "
      "3.5 \r\n\r\n");
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/metrics");
  EXPECT_EQ(request.field("x-prometheus-scrape-timeout-seconds"), "3.5");
  EXPECT_EQ(request.field("Absent"), "");
  EXPECT_TRUE(request.keep_alive());
  EXPECT_EQ(parsed("GET http://node:10046/metrics HTTP/1.1\r\n\r\n").path, "/metrics");
  EXPECT_EQ(parsed("GET http://node HTTP/1.1\r\n\r\n").path, "/");
}

TEST(RequestHead, KeepsTheConnectionAsTheVersionSays) {
  EXPECT_FALSE(parsed("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").keep_alive());
  EXPECT_FALSE(parsed("GET / HTTP/1.0\r\n\r\n").keep_alive());
  EXPECT_TRUE(parsed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive());
}

TEST(RequestHead, RefusesWhatItDoesNotServe) {
  EXPECT_EQ(refused_with("\x00\xff garbage\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET / HTTP/9.9\r\n\r\n"), 505);
  EXPECT_EQ(refused_with("GET / SPDY\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET * HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET /a b HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"), 400);
  EXPECT_EQ(refused_with(std::string("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n")), 400);
  EXPECT_EQ(refused_with("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), 413);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 413);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"), 400);
  EXPECT_EQ(refused_with("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 0);
  std::string many_fields = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many_fields += "a:\r\n";
  EXPECT_EQ(refused_with(many_fields + "\r\n"), 431);
}

// A server on a free port of 127.0.0.1, serving on its own thread until the test ends.
class ServerTest : public ::testing::Test {
 protected:
  void start(ServerLimits limits) {
    server_ = std::make_unique<Server>(
        [this](const Request& request) -> Response {
          handled_.fetch_add(1);
          if (request.path == "/slow") std::this_thread::sleep_for(slow_handling_);
          if (request.path == "/throw") throw std::runtime_error("the handler failed");
          if (request.path == "/big") return {200, "text/plain", big_};
          return text_response(200, "path " + request.path + "\n", "text/plain");
        },
        limits);
    port_ = server_->listen("127.0.0.1", 0);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    serving_ = std::thread([this] { server_->serve(stop_fd_); });
  }

  void TearDown() override {
    if (serving_.joinable()) {
      const uint64_t one = 1;
      ASSERT_EQ(::write(stop_fd_, &one, sizeof(one)), 8);
      serving_.join();
      ::close(stop_fd_);
    }
  }

  // `receive_buffer_bytes`: the client's SO_RCVBUF, 0 for the kernel's default (which grows).
  int connect_client(int receive_buffer_bytes = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer_bytes > 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof(receive_buffer_bytes));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    return fd;
  }

  static void send_all(int fd, const std::string& bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Everything the server sends until it closes the connection; a failure if it has not within
  // the client's 10 s.
  static std::string read_to_end(int fd) {
    std::string all;
    char buffer[4096];
    ssize_t got;
    while ((got = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) all.append(buffer, got);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ADD_FAILURE() << "the server did not close the connection";
    }
    ::close(fd);
    return all;
  }

  // What the server sends until it closes the connection, taken `chunk` bytes at a time with
  // `pause` after each take, and the error that ended it: 0 when the server closed cleanly.
  static std::pair<std::string, int> take_all(int fd, size_t chunk,
                                              std::chrono::milliseconds pause) {
    std::string all;
    std::string buffer(chunk, '\0');
    ssize_t got;
    while ((got = ::recv(fd, buffer.data(), chunk, MSG_WAITALL)) > 0) {
      all.append(buffer.data(), static_cast<size_t>(got));
      std::this_thread::sleep_for(pause);
    }
    const int error = got < 0 ? errno : 0;
    ::close(fd);
    return {all, error};
  }

  // The body of the one answer in `answer`.
  static std::string body_of(const std::string& answer) {
    const size_t end = answer.find("\r\n\r\n");
    return end == std::string::npos ? "" : answer.substr(end + 4);
  }

  // The answers read until `count` whole ones (head and Content-Length bytes) have arrived, with
  // `pause` after each read.
  static std::string read_answers(int fd, int count, std::chrono::milliseconds pause = 0ms) {
    std::string all;
    char buffer[4096];
    while (true) {
      size_t at = 0;
      int complete = 0;
      for (size_t end; (end = all.find("\r\n\r\n", at)) != std::string::npos; ++complete) {
        const size_t length = all.find("Content-Length: ", at);
        if (length == std::string::npos || length > end) break;
        at = end + 4 + std::stoul(all.substr(length + 16));
        if (at > all.size()) break;
      }
      if (complete >= count) return all;
      const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
      if (got <= 0) return all;
      all.append(buffer, got);
      std::this_thread::sleep_for(pause);
    }
  }

  std::unique_ptr<Server> server_;
  int port_ = 0;
  int stop_fd_ = -1;
  std::thread serving_;
  std::atomic<int> handled_{0};
  std::chrono::milliseconds slow_handling_ = 2000ms;
  std::shared_ptr<const std::string> big_ =
      std::make_shared<const std::string>(size_t{16} << 20, 'x');
};

TEST_F(ServerTest, AnswersRequestsOnOneConnectionInOrder) {
  start({});
  const int fd = connect_client();
  // Two requests in one send (pipelined), then a third after the answers.
  send_all(fd, "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string first = read_answers(fd, 2);
  EXPECT_EQ(first,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\npath /one\n"
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\npath /two\n");
  send_all(fd, "HEAD /three HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(read_to_end(fd),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
            "Connection: close\r\n\r\n");
}

TEST_F(ServerTest, RefusesAndCloses) {
  start({});
  int fd = connect_client();
  send_all(fd, "POST /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(read_to_end(fd).substr(0, 54),
            "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nCon");
  fd = connect_client();
  send_all(fd, "GET /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\nxx");
  EXPECT_EQ(read_to_end(fd).substr(0, 30), "HTTP/1.1 413 Content Too Large");
  fd = connect_client();
  send_all(fd, "GET /throw HTTP/1.1\r\n\r\n");
  EXPECT_NE(read_answers(fd, 1).find("HTTP/1.1 500 Internal Server Error\r\n"), std::string::npos);
  ::close(fd);
  EXPECT_EQ(handled_.load(), 1);  // the refused requests never reached the handler
}

TEST_F(ServerTest, KeepsNoMoreThanOneHeadPerConnection) {
  ServerLimits limits;
  limits.max_head_bytes = 1024;
  start(limits);
  const int fd = connect_client();
  // An endless request line: the server answers once it holds 1,025 bytes of it, keeps no more
  // of it, and drops the rest unread while it closes.
  send_all(fd, "GET /" + std::string(1020, 'a'));
  send_all(fd, std::string(64 << 10, 'a'));  // unread: the answer still arrives whole
  const std::string answer = read_to_end(fd);
  EXPECT_EQ(answer,
            "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; "
            "charset=utf-8\r\nContent-Length: 22\r\nConnection: close\r\n\r\nrequest head too "
            "long\n");
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(ServerTest, ClosesAConnectionThatSendsNoRequestInTime) {
  ServerLimits limits;
  limits.request_timeout_ms = 200;
  start(limits);
  const int fd = connect_client();
  send_all(fd, "GET /metr");
  const auto start_time = std::chrono::steady_clock::now();
  EXPECT_EQ(read_to_end(fd), "");
  const auto waited = std::chrono::steady_clock::now() - start_time;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 9s);  // closed by the server, not by the client's 10 s timeout
}

TEST_F(ServerTest, ASlowHandlerHoldsNoOtherRequest) {
  ServerLimits limits;
  limits.handler_threads = 2;
  start(limits);
  const int slow = connect_client();
  send_all(slow, "GET /slow HTTP/1.1\r\n\r\n");
  const int fast = connect_client();
  send_all(fast, "GET /fast HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(fast).find("path /fast\n"), std::string::npos);
  // The fast answer came while the slow handler still slept: its connection has nothing yet.
  char byte;
  EXPECT_EQ(::recv(slow, &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_NE(read_answers(slow, 1).find("path /slow\n"), std::string::npos);
  ::close(slow);
}

TEST_F(ServerTest, SilentConnectionsMakeRoomForNewOnes) {
  ServerLimits limits;
  limits.max_connections = 4;
  start(limits);
  std::vector<int> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(connect_client());
    send_all(silent.back(), "GET /");
  }
  const int fd = connect_client();
  send_all(fd, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(fd).find("path /metrics\n"), std::string::npos);
  // The five that waited longest were closed to make room.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(read_to_end(silent[i]), "") << i;
  for (size_t i = 5; i < silent.size(); ++i) ::close(silent[i]);
}

TEST_F(ServerTest, ClientsThatHangUpWhileHandledStillCount) {
  ServerLimits limits;
  limits.max_connections = 2;
  slow_handling_ = 500ms;
  start(limits);
  // Two requests whose clients hang up at once: each stays counted until its handler ends, so a
  // third client waits in the backlog instead of adding a third request for the handlers.
  for (int i = 0; i < 2; ++i) {
    const int fd = connect_client();
    send_all(fd, "GET /slow HTTP/1.1\r\n\r\n");
    while (handled_.load() < i + 1) std::this_thread::sleep_for(1ms);  // taken, and handled
    linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    ::close(fd);
  }
  const auto asked = std::chrono::steady_clock::now();
  const int fd = connect_client();
  send_all(fd, "GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(fd).find("path /slow\n"), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 800ms);  // after a hung-up one ended
  EXPECT_EQ(handled_.load(), 3);
}

TEST_F(ServerTest, AnAnswerNotTakenInTimeIsDropped) {
  ServerLimits limits;
  limits.answer_timeout_ms = 300;
  start(limits);
  // 16 MiB asked for and never read: the connection is closed 300 ms into the answer, and others
  // are served meanwhile.
  const int reader = connect_client();
  send_all(reader, "GET /big HTTP/1.1\r\n\r\n");
  const int other = connect_client();
  send_all(other, "GET /other HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(other).find("path /other\n"), std::string::npos);
  std::this_thread::sleep_for(600ms);
  // Reset: what the server had not sent is dropped with the connection, not left in its kernel
  // for as long as the client keeps from reading (an orphan socket charged to the exporter).
  size_t got = 0;
  char buffer[65536];
  ssize_t read;
  while ((read = ::recv(reader, buffer, sizeof(buffer), 0)) > 0) got += static_cast<size_t>(read);
  EXPECT_EQ(read, -1);
  EXPECT_EQ(errno, ECONNRESET);
  EXPECT_LT(got, big_->size());
  ::close(reader);
}

TEST_F(ServerTest, AClientThatShutsItsSideDownAfterItsRequestTakesTheWholeAnswer) {
  big_ = std::make_shared<const std::string>(size_t{4} << 20, 'x');
  start({});
  // Kept alive or told to go, the answer is far larger than the socket buffers (the client's
  // kept small): the server reads the client's end while the kernel still holds the answer's tail.
  for (const char* request : {"GET /big HTTP/1.1\r\n\r\n", "GET /big HTTP/1.0\r\n\r\n"}) {
    const int fd = connect_client(4096);
    send_all(fd, request);
    ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
    std::this_thread::sleep_for(100ms);
    const auto [answer, error] = take_all(fd, 64 << 10, 0ms);
    EXPECT_EQ(error, 0) << request << std::strerror(error);
    EXPECT_EQ(body_of(answer).size(), big_->size()) << request;
  }
}

TEST_F(ServerTest, AClientThatShutsItsSideDownBeforeARequestIsClosedUnanswered) {
  start({});
  const int fd = connect_client();
  send_all(fd, "GET /metr");
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  const auto [answer, error] = take_all(fd, 4096, 0ms);
  EXPECT_EQ(answer, "");
  EXPECT_EQ(error, 0) << std::strerror(error);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(ServerTest, AClientToldToGoTakesItsAnswerAtItsOwnPace) {
  big_ = std::make_shared<const std::string>(size_t{96} << 10, 'x');
  start({});
  // 4 KiB every 100 ms through a small receive buffer: the server has written the whole answer
  // long before the client has taken it (2.4 s), well within the answer timeout (10 s).
  const int fd = connect_client(4096);
  send_all(fd, "GET /big HTTP/1.0\r\n\r\n");
  const auto [answer, error] = take_all(fd, 4096, 100ms);
  EXPECT_EQ(error, 0) << std::strerror(error);
  EXPECT_EQ(body_of(answer).size(), big_->size());
}

TEST_F(ServerTest, AClosedAnswerNotTakenInTimeIsDropped) {
  ServerLimits limits;
  limits.answer_timeout_ms = 300;
  big_ = std::make_shared<const std::string>(size_t{64} << 10, 'x');
  start(limits);
  // Written whole into the kernel, told to go, and never read by a client that shut its side
  // down: the connection is kept until the answer timeout, then reset.
  const int fd = connect_client(4096);
  send_all(fd, "GET /big HTTP/1.0\r\n\r\n");
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);
  std::this_thread::sleep_for(150ms);
  int pending = 0;
  socklen_t length = sizeof(pending);
  ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length), 0);
  EXPECT_EQ(pending, 0) << "reset before the answer timeout: " << std::strerror(pending);
  std::this_thread::sleep_for(600ms);
  const auto [answer, error] = take_all(fd, 4096, 0ms);
  EXPECT_EQ(error, ECONNRESET) << std::strerror(error);
  EXPECT_LT(body_of(answer).size(), big_->size());
}

TEST_F(ServerTest, AKeptAliveClientTakesItsAnswerAtItsOwnPace) {
  ServerLimits limits;
  limits.request_timeout_ms = 300;
  big_ = std::make_shared<const std::string>(size_t{96} << 10, 'x');
  start(limits);
  // At most 4 KiB every 50 ms: the kernel holds the answer's tail for a second or more after the
  // server has written it, longer than the request timeout, which starts once the tail is taken.
  const int fd = connect_client(4096);
  send_all(fd, "GET /big HTTP/1.1\r\n\r\n");
  EXPECT_EQ(body_of(read_answers(fd, 1, 50ms)).size(), big_->size());
  send_all(fd, "GET /next HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(fd).find("path /next\n"), std::string::npos);
}

TEST_F(ServerTest, AKeptAliveAnswerNotTakenInTimeIsDropped) {
  ServerLimits limits;
  limits.answer_timeout_ms = 300;
  big_ = std::make_shared<const std::string>(size_t{32} << 10, 'x');
  start(limits);
  // Written whole into the kernel and never read: the connection waits for no request while the
  // kernel holds the answer's tail, and is reset at the answer timeout, not the request timeout.
  const int fd = connect_client(4096);
  send_all(fd, "GET /big HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(700ms);
  const auto [answer, error] = take_all(fd, 4096, 0ms);
  EXPECT_EQ(error, ECONNRESET) << std::strerror(error);
  EXPECT_LT(body_of(answer).size(), big_->size());
}

TEST_F(ServerTest, AKeptAliveClientTakingItsAnswerIsNotMadeToMakeRoom) {
  ServerLimits limits;
  limits.max_connections = 2;
  big_ = std::make_shared<const std::string>(size_t{64} << 10, 'x');
  start(limits);
  // The answer written whole into the kernel, its client is still taking it, not waiting for its
  // next request: the silent client makes room for the newcomer.
  const int taking = connect_client(4096);
  send_all(taking, "GET /big HTTP/1.1\r\n\r\n");
  std::this_thread::sleep_for(200ms);
  const int silent = connect_client();
  send_all(silent, "GET /");
  const int fd = connect_client();
  send_all(fd, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(fd).find("path /metrics\n"), std::string::npos);
  EXPECT_EQ(read_to_end(silent), "");
  EXPECT_EQ(body_of(read_answers(taking, 1)).size(), big_->size());
  ::close(taking);
}

// Clients that keep their connections busy, their requests sent ahead of their answers, hold no
// place while the server is full: each answer then ends its connection, and a newcomer waiting in
// the backlog is served.
TEST_F(ServerTest, WhileFullEachAnswerEndsItsConnection) {
  ServerLimits limits;
  limits.max_connections = 2;
  start(limits);
  const int first = connect_client();
  const int second = connect_client();
  std::this_thread::sleep_for(200ms);  // both taken: the server is full
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  send_all(first, ten);
  send_all(second, ten);
  // Both taken (a client still waiting for its first request would make room for the newcomer).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (handled_.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(handled_.load(), 2);
  const int newcomer = connect_client();
  send_all(newcomer, "GET /new HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(read_to_end(newcomer).find("path /new\n"), std::string::npos);
  // The answer started first was started while both were connected: it ended its connection. (The
  // other's may have started once that connection had gone, with room again.)
  const std::string one_answer_then_close =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n"
      "Connection: close\r\n\r\npath /metrics\n";
  const std::string from_first = read_to_end(first);
  const std::string from_second = read_to_end(second);
  EXPECT_TRUE(from_first == one_answer_then_close || from_second == one_answer_then_close)
      << from_first << "\n--\n"
      << from_second;
}

}  // namespace
}  // namespace vramshim::http
