#include "analyzer/http/http_server.h"

#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace vramshim::http {
namespace {

using Clock = std::chrono::steady_clock;

// Past this, the loop leaves the listening socket alone for a moment: accept fails while the
// process is out of descriptors, and polling it again at once would spin.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Connections accepted per pass of the loop, so that a flood of them does not keep it from
// sending answers and enforcing deadlines.
constexpr int kAcceptsPerPass = 64;
// While closing, what the client still sends is read and dropped, up to this many bytes: closing
// with unread input would reset the connection, and the client could lose the answer in flight.
constexpr size_t kClosingBytes = 64 << 10;
// How often connections done sending are asked whether the client has taken all the kernel held
// for it: no poll event tells that.
constexpr auto kDrainCheck = std::chrono::milliseconds(50);
// A connection whose answer has made no progress this long may make room for a new one.
constexpr auto kStalled = std::chrono::seconds(1);

const char* status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 500 ? "Client Error" : "Internal Server Error";
  }
}

std::string format_head(const Response& response, bool keep_alive) {
  const size_t length = response.body != nullptr ? response.body->size() : 0;
  // A 405 must say which methods are served (RFC 9110, 15.5.6).
  return "HTTP/1.1 " + std::to_string(response.status) + " " + status_text(response.status) +
         (response.status == 405 ? "\r\nAllow: GET, HEAD" : "") +
         "\r\nContent-Type: " + response.content_type +
         "\r\nContent-Length: " + std::to_string(length) +
         (keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
}

enum class Phase {
  kReading,   // waiting for a whole request head
  kHandling,  // a handler thread has its request
  kWriting,   // sending the answer
  // Done (its client told to go, or done sending, and its answers written): the kernel still sends
  // what it holds, and what the client sends is dropped, until the client has taken it all.
  kClosing,
};

struct Connection {
  // -1 once closed while its request is handled: the connection is kept, and counted, until the
  // handler ends, so that clients that hang up cannot pile up requests for the handlers.
  int fd = -1;
  Phase phase = Phase::kReading;
  // Of its phase (none while handling); while reading, the answer's until the client has taken the
  // last answer.
  Clock::time_point deadline;
  // While answering, closing or taking the last answer: when it last sent or took anything.
  Clock::time_point progress;
  std::string received;                     // bytes of requests not yet handled
  std::string head;                         // of the answer being sent
  std::shared_ptr<const std::string> body;  // of the answer being sent; null for none
  size_t sent = 0;                          // bytes of head, then body, sent
  bool close_after_answer = false;
  // The client shut its side down (or closed): it sends no more, and is no longer polled for input.
  bool input_ended = false;
  size_t dropped = 0;  // bytes read and dropped while closing
  // Once done sending: the bytes the client had not acknowledged when last asked.
  int unacknowledged = 0;

  // Done sending (kept alive, or closing), its client has yet to take what the kernel holds.
  bool taking_answer() const {
    return phase == Phase::kClosing || (phase == Phase::kReading && unacknowledged > 0);
  }
};

struct Job {
  uint64_t connection;
  Request request;
};

struct Finished {
  uint64_t connection;
  Response response;
  bool with_body;
  bool keep_alive;
};

}  // namespace

Response text_response(int status, std::string text, std::string content_type) {
  return {status, std::move(content_type), std::make_shared<const std::string>(std::move(text))};
}

struct Server::State {
  std::function<Response(const Request&)> handler;
  ServerLimits limits;
  int listening_fd = -1;
  int wake_fd = -1;  // eventfd: a handler finished

  // The loop's own.
  std::map<uint64_t, Connection> connections;  // by id, in the order they were accepted
  uint64_t next_id = 0;

  std::mutex mutex;  // guards jobs, finished and stopping
  std::condition_variable job_ready;
  std::deque<Job> jobs;
  std::vector<Finished> finished;
  bool stopping = false;

  void handle_jobs();
  void handle(Job& job);
  std::map<uint64_t, Connection>::iterator to_evict(Clock::time_point now);
  bool room_for_a_connection(Clock::time_point now);
  void accept_connections(Clock::time_point now, Clock::time_point& paused_until);
  void receive(uint64_t id, Connection& connection, Clock::time_point now);
  void take_request(uint64_t id, Connection& connection, Clock::time_point now);
  void start_answer(Connection& connection, Response response, bool with_body, bool keep_alive,
                    Clock::time_point now);
  void send_answer(uint64_t id, Connection& connection, Clock::time_point now);
  void start_closing(uint64_t id, Connection& connection, Clock::time_point now);
  void drop_input(uint64_t id, Connection& connection, Clock::time_point now);
  bool still_taking(Connection& connection, Clock::time_point now);
  void close_once_taken(uint64_t id, Connection& connection, Clock::time_point now);
  void wait_for_request_once_taken(Connection& connection, Clock::time_point now);
  void take_finished(Clock::time_point now);
  void close_connection(uint64_t id);
  void stop_handlers(std::vector<std::thread>& handlers);
};

Server::Server(std::function<Response(const Request&)> handler, ServerLimits limits)
    : state_(std::make_unique<State>()) {
  state_->handler = std::move(handler);
  state_->limits = limits;
  state_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (state_->wake_fd < 0) {
    throw std::runtime_error(std::string("cannot make an eventfd: ") + std::strerror(errno));
  }
}

Server::~Server() {
  for (auto& [id, connection] : state_->connections) {
    if (connection.fd >= 0) ::close(connection.fd);
  }
  if (state_->listening_fd >= 0) ::close(state_->listening_fd);
  ::close(state_->wake_fd);
}

int Server::listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string service = std::to_string(port);
  const int resolved =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &addresses);
  if (resolved != 0) {
    throw std::runtime_error("cannot resolve \"" + host + "\": " + ::gai_strerror(resolved));
  }
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* address = addresses; address != nullptr && fd < 0; address = address->ai_next) {
    fd = ::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  address->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR alone, not SO_REUSEPORT: a second exporter on a port already served fails to
    // start instead of silently taking half the scrapes.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, address->ai_addr, address->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(addresses);
  if (fd < 0) throw std::runtime_error(why);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  state_->listening_fd = fd;
  return bound.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
             : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
}

void Server::State::handle_jobs() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex);
      job_ready.wait(lock, [this] { return stopping || !jobs.empty(); });
      if (stopping) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    handle(job);
  }
}

void Server::State::handle(Job& job) {
  Finished done{job.connection, {}, job.request.method != "HEAD", job.request.keep_alive()};
  try {
    done.response = handler(job.request);
  } catch (const std::exception& error) {
    done.response = {500, "text/plain; charset=utf-8", nullptr};
    try {
      done.response.body = std::make_shared<const std::string>(std::string(error.what()) + "\n");
    } catch (...) {
    }
  } catch (...) {
    done.response = {500, "text/plain; charset=utf-8", nullptr};
  }
  try {
    std::lock_guard<std::mutex> lock(mutex);
    finished.push_back(std::move(done));
  } catch (...) {
    // Out of memory: the connection waits until the server stops; nothing worse.
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd, &one, sizeof(one));
}

void Server::State::close_connection(uint64_t id) {
  const auto found = connections.find(id);
  if (found == connections.end()) return;
  Connection& connection = found->second;
  if (connection.fd >= 0) {
    // What it has not taken would outlive the close in the kernel (an orphan socket, charged to
    // this process, for as long as the client keeps from reading): a reset drops it. A connection
    // whose client takes its answer is closed once it has (close_once_taken), not reset.
    int unsent = 0;
    if (::ioctl(connection.fd, SIOCOUTQ, &unsent) == 0 && unsent > 0) {
      const linger reset{1, 0};
      ::setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    }
    ::close(connection.fd);
  }
  if (connection.phase == Phase::kHandling) {
    connection.fd = -1;  // gone when its handler ends (take_finished)
    return;
  }
  connections.erase(found);
}

// The connection to close to make room for a new one: the one waiting longest for its request (one
// whose client still takes the last answer is not), else, of those whose answer has made no
// progress for kStalled (a client that does not read), the one stalled longest; end() if none may
// go.
std::map<uint64_t, Connection>::iterator Server::State::to_evict(Clock::time_point now) {
  auto reader = connections.end();
  auto stalled = connections.end();
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    const Connection& connection = it->second;
    if (connection.phase == Phase::kReading && !connection.taking_answer()) {
      if (reader == connections.end() || connection.deadline < reader->second.deadline) reader = it;
    } else if (connection.phase != Phase::kHandling && now - connection.progress >= kStalled) {
      if (stalled == connections.end() || connection.progress < stalled->second.progress) {
        stalled = it;
      }
    }
  }
  return reader != connections.end() ? reader : stalled;
}

bool Server::State::room_for_a_connection(Clock::time_point now) {
  return connections.size() < limits.max_connections || to_evict(now) != connections.end();
}

void Server::State::accept_connections(Clock::time_point now, Clock::time_point& paused_until) {
  // While every connection is being handled, newcomers wait in the listen backlog.
  for (int accepted = 0; accepted < kAcceptsPerPass && room_for_a_connection(now); ++accepted) {
    const int fd = ::accept4(listening_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) paused_until = now + kAcceptPause;
      return;
    }
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &limits.send_buffer_bytes,
                 sizeof(limits.send_buffer_bytes));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &limits.receive_buffer_bytes,
                 sizeof(limits.receive_buffer_bytes));
    if (connections.size() >= limits.max_connections) close_connection(to_evict(now)->first);
    const uint64_t id = next_id++;
    Connection& connection = connections[id];
    connection.fd = fd;
    connection.deadline = now + std::chrono::milliseconds(limits.request_timeout_ms);
    // A request that came with the connection is taken at once, so that the connection is no
    // longer one waiting for its request, which the next newcomers could push out.
    receive(id, connection, now);
  }
}

void Server::State::start_answer(Connection& connection, Response response, bool with_body,
                                 bool keep_alive, Clock::time_point now) {
  // While the server is full, each answer ends its connection: clients that keep theirs busy
  // (requests sent ahead of their answers) would otherwise keep every newcomer waiting.
  keep_alive = keep_alive && connections.size() < limits.max_connections;
  connection.head = format_head(response, keep_alive);
  connection.body = with_body ? std::move(response.body) : nullptr;
  connection.sent = 0;
  connection.close_after_answer = !keep_alive;
  connection.phase = Phase::kWriting;
  connection.deadline = now + std::chrono::milliseconds(limits.answer_timeout_ms);
  connection.progress = now;
}

// Starts on the next request in `connection.received`, if a whole head is there.
void Server::State::take_request(uint64_t id, Connection& connection, Clock::time_point now) {
  const std::optional<size_t> length = head_length(connection.received);
  if (!length ? connection.received.size() > limits.max_head_bytes
              : *length > limits.max_head_bytes) {
    start_answer(connection, text_response(431, "request head too long\n"), true, false, now);
    return;
  }
  if (!length) return;
  auto parsed = parse_request_head(std::string_view(connection.received).substr(0, *length));
  connection.received.erase(0, *length);
  if (const auto* refusal = std::get_if<Refusal>(&parsed)) {
    start_answer(connection, text_response(refusal->status, refusal->reason + "\n"), true, false,
                 now);
    return;
  }
  Request& request = std::get<Request>(parsed);
  if (request.method != "GET" && request.method != "HEAD") {
    start_answer(connection, text_response(405, "only GET and HEAD are served\n"), true, false,
                 now);
    return;
  }
  request.arrived = now;
  connection.phase = Phase::kHandling;
  {
    std::lock_guard<std::mutex> lock(mutex);
    jobs.push_back({id, std::move(request)});
  }
  job_ready.notify_one();
}

void Server::State::receive(uint64_t id, Connection& connection, Clock::time_point now) {
  // At most one byte past the longest head is kept: enough to tell that it is too long.
  const size_t room =
      limits.max_head_bytes + 1 - std::min(connection.received.size(), limits.max_head_bytes + 1);
  char buffer[4096];
  const ssize_t got = ::recv(connection.fd, buffer, std::min(sizeof(buffer), room), 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (got < 0) {
    close_connection(id);
    return;
  }
  if (got == 0) {
    // The client sends no more: an unfinished request gets no answer, and what the kernel still
    // holds of its last answer gets the answer timeout to be taken.
    connection.input_ended = true;
    connection.deadline = now + std::chrono::milliseconds(limits.answer_timeout_ms);
    start_closing(id, connection, now);
    return;
  }
  connection.received.append(buffer, static_cast<size_t>(got));
  take_request(id, connection, now);
}

void Server::State::send_answer(uint64_t id, Connection& connection, Clock::time_point now) {
  const size_t body_size = connection.body != nullptr ? connection.body->size() : 0;
  while (connection.sent < connection.head.size() + body_size) {
    iovec parts[2];
    int count = 0;
    if (connection.sent < connection.head.size()) {
      parts[count++] = {connection.head.data() + connection.sent,
                        connection.head.size() - connection.sent};
    }
    const size_t body_sent = connection.sent - std::min(connection.sent, connection.head.size());
    if (body_sent < body_size) {
      parts[count++] = {const_cast<char*>(connection.body->data()) + body_sent,
                        body_size - body_sent};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t sent = ::sendmsg(connection.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (sent <= 0) {
      close_connection(id);
      return;
    }
    connection.sent += static_cast<size_t>(sent);
    connection.progress = now;
  }
  connection.head.clear();
  connection.body.reset();
  if (connection.close_after_answer) {
    // Taking what the kernel still holds of it counts against the answer's deadline.
    start_closing(id, connection, now);
    return;
  }
  connection.phase = Phase::kReading;
  wait_for_request_once_taken(connection, now);
  take_request(id, connection, now);  // a request sent before this answer was taken
}

// The client sees the end of the answers (its connection's deadline bounds how long it may take
// to take them), and what it still sends is dropped.
void Server::State::start_closing(uint64_t id, Connection& connection, Clock::time_point now) {
  ::shutdown(connection.fd, SHUT_WR);
  connection.received.clear();
  connection.phase = Phase::kClosing;
  close_once_taken(id, connection, now);
}

void Server::State::drop_input(uint64_t id, Connection& connection, Clock::time_point now) {
  char buffer[4096];
  const ssize_t got = ::recv(connection.fd, buffer, sizeof(buffer), 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (got == 0) {
    connection.input_ended = true;
    close_once_taken(id, connection, now);
    return;
  }
  if (got > 0) connection.dropped += static_cast<size_t>(got);
  if (got < 0 || connection.dropped > kClosingBytes) close_connection(id);
}

// Whether the client of a connection done sending has yet to acknowledge what it was sent (it has
// not when it reset the connection); a client that takes more counts as making progress.
bool Server::State::still_taking(Connection& connection, Clock::time_point now) {
  int unacknowledged = 0;
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::ioctl(connection.fd, SIOCOUTQ, &unacknowledged) != 0 ||
      (unacknowledged > 0 &&
       ::getsockopt(connection.fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 &&
       info.tcpi_state == TCP_CLOSE)) {
    unacknowledged = 0;
  }
  if (unacknowledged < connection.unacknowledged) connection.progress = now;
  connection.unacknowledged = unacknowledged;
  return unacknowledged > 0;
}

// Closes a closing connection once its client has acknowledged everything (the end included), or
// reset it.
void Server::State::close_once_taken(uint64_t id, Connection& connection, Clock::time_point now) {
  if (!still_taking(connection, now)) close_connection(id);
}

// After a kept-alive answer, the request timeout starts once the client has taken all of it: until
// then the client is still taking the answer (closing the connection would reset it and lose the
// tail), against the answer's deadline.
void Server::State::wait_for_request_once_taken(Connection& connection, Clock::time_point now) {
  if (!still_taking(connection, now)) {
    connection.deadline = now + std::chrono::milliseconds(limits.request_timeout_ms);
  }
}

void Server::State::take_finished(Clock::time_point now) {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t drained = ::read(wake_fd, &count, sizeof(count));
  std::vector<Finished> done;
  {
    std::lock_guard<std::mutex> lock(mutex);
    done.swap(finished);
  }
  for (Finished& answer : done) {
    const auto found = connections.find(answer.connection);
    if (found == connections.end()) continue;
    Connection& connection = found->second;
    if (connection.fd < 0) {  // closed while it was handled
      connections.erase(found);
      continue;
    }
    start_answer(connection, std::move(answer.response), answer.with_body, answer.keep_alive, now);
    send_answer(answer.connection, connection, now);
  }
}

void Server::State::stop_handlers(std::vector<std::thread>& handlers) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  job_ready.notify_all();
  for (std::thread& handler : handlers) {
    if (handler.joinable()) handler.join();
  }
}

void Server::serve(int stop_fd) {
  State& state = *state_;
  std::vector<std::thread> handlers;
  std::string failure;
  try {
    for (size_t i = 0; i < std::max<size_t>(1, state.limits.handler_threads); ++i) {
      handlers.emplace_back([&state] { state.handle_jobs(); });
    }
    Clock::time_point accept_paused_until{};
    Clock::time_point next_drain_check{};
    std::vector<pollfd> polled;
    std::vector<uint64_t> polled_ids;
    while (true) {
      Clock::time_point now = Clock::now();
      polled.assign({{stop_fd, POLLIN, 0}, {state.wake_fd, POLLIN, 0}});
      polled_ids.clear();
      Clock::time_point wake_at = now + std::chrono::seconds(1);
      if (now < accept_paused_until) {
        wake_at = std::min(wake_at, accept_paused_until);
      } else if (state.room_for_a_connection(now)) {
        polled.push_back({state.listening_fd, POLLIN, 0});
      }
      const size_t first_connection = polled.size();
      for (const auto& [id, connection] : state.connections) {
        if (connection.fd < 0) continue;
        if (connection.phase != Phase::kHandling) wake_at = std::min(wake_at, connection.deadline);
        if (connection.taking_answer()) wake_at = std::min(wake_at, next_drain_check);
        // Its input and output both shut down, poll would report it hung up, at once, every time.
        if (connection.phase == Phase::kClosing && connection.input_ended) continue;
        const short events = connection.phase == Phase::kWriting    ? POLLOUT
                             : connection.phase == Phase::kHandling ? 0
                                                                    : POLLIN;
        polled.push_back({connection.fd, events, 0});
        polled_ids.push_back(id);
      }
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      if (::poll(polled.data(), polled.size(), static_cast<int>(std::max<int64_t>(0, wait))) < 0) {
        if (errno == EINTR) continue;
        failure = std::string("cannot wait for the sockets: ") + std::strerror(errno);
        break;
      }
      if (polled[0].revents != 0) break;
      now = Clock::now();
      if (polled[1].revents != 0) state.take_finished(now);
      if (first_connection == 3 && polled[2].revents != 0) {
        state.accept_connections(now, accept_paused_until);
      }
      for (size_t i = 0; i < polled_ids.size(); ++i) {
        const short revents = polled[first_connection + i].revents;
        const auto found = state.connections.find(polled_ids[i]);
        if (revents == 0 || found == state.connections.end() || found->second.fd < 0) continue;
        Connection& connection = found->second;
        switch (connection.phase) {
          case Phase::kReading:
            state.receive(polled_ids[i], connection, now);
            break;
          case Phase::kWriting:
            state.send_answer(polled_ids[i], connection, now);
            break;
          case Phase::kClosing:
            state.drop_input(polled_ids[i], connection, now);
            break;
          case Phase::kHandling:
            // Hung up while handled: its answer, once made, is dropped.
            if (revents & (POLLERR | POLLHUP)) state.close_connection(polled_ids[i]);
            break;
        }
      }
      const bool drain_check = now >= next_drain_check;
      if (drain_check) next_drain_check = now + kDrainCheck;
      for (auto it = state.connections.begin(); it != state.connections.end();) {
        const auto next = std::next(it);
        if (it->second.phase != Phase::kHandling && now >= it->second.deadline) {
          state.close_connection(it->first);
        } else if (drain_check && it->second.phase == Phase::kClosing) {
          state.close_once_taken(it->first, it->second, now);
        } else if (drain_check && it->second.taking_answer()) {
          state.wait_for_request_once_taken(it->second, now);
        }
        it = next;
      }
    }
  } catch (const std::exception& error) {
    failure = error.what();
  }
  state.stop_handlers(handlers);
  if (!failure.empty()) throw std::runtime_error(failure);
}

}  // namespace vramshim::http
