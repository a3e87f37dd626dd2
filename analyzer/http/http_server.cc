#include "analyzer/http/http_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
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
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 500 ? "Client Error" : "Internal Server Error";
  }
}

std::string format_answer(const Response& response, bool with_body, bool keep_alive) {
  std::string answer = "HTTP/1.1 " + std::to_string(response.status) + " " +
                       status_text(response.status) + "\r\nContent-Type: " + response.content_type +
                       "\r\nContent-Length: " + std::to_string(response.body.size()) +
                       (keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  if (with_body) answer += response.body;
  return answer;
}

enum class Phase {
  kReading,   // waiting for a whole request head
  kQueued,    // its request waits for an answer slot
  kHandling,  // a handler thread has its request
  kWriting,   // sending the answer
};

bool holds_an_answer_slot(Phase phase) {
  return phase == Phase::kHandling || phase == Phase::kWriting;
}

struct Connection {
  int fd = -1;
  Phase phase = Phase::kReading;
  Clock::time_point deadline;  // of reading or writing
  std::string received;        // bytes of requests not yet handled
  std::optional<Request> queued_request;
  std::string answer;
  size_t sent = 0;
  bool close_after_answer = false;
};

struct Job {
  uint64_t connection;
  Request request;
};

struct Finished {
  uint64_t connection;
  std::string answer;
  bool keep_alive;
};

}  // namespace

struct Server::State {
  std::function<Response(const Request&)> handler;
  ServerLimits limits;
  int listening_fd = -1;
  int wake_fd = -1;  // eventfd: a handler finished

  // The loop's own.
  std::map<uint64_t, Connection> connections;  // by id, in the order they were accepted
  uint64_t next_id = 0;
  size_t answer_slots_taken = 0;  // connections handling or writing
  std::deque<uint64_t> waiting_for_a_slot;

  std::mutex mutex;  // guards jobs, finished and stopping
  std::condition_variable job_ready;
  std::deque<Job> jobs;
  std::vector<Finished> finished;
  bool stopping = false;

  void handle_jobs();
  void set_phase(Connection& connection, Phase phase);
  std::map<uint64_t, Connection>::iterator longest_waiting();
  bool room_for_a_connection();
  void accept_connections(Clock::time_point now, Clock::time_point& paused_until);
  void receive(uint64_t id, Connection& connection, Clock::time_point now);
  void take_request(uint64_t id, Connection& connection, Clock::time_point now);
  void hand_out_slots();
  void send_answer(uint64_t id, Connection& connection, Clock::time_point now);
  void answer_now(Connection& connection, const Response& response, bool keep_alive,
                  Clock::time_point now);
  void close_connection(uint64_t id);
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
  for (auto& [id, connection] : state_->connections) ::close(connection.fd);
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
    Response response;
    try {
      response = handler(job.request);
    } catch (const std::exception& error) {
      response = {500, "text/plain; charset=utf-8", std::string(error.what()) + "\n"};
    } catch (...) {
      response = {500, "text/plain; charset=utf-8", "the handler failed\n"};
    }
    const bool keep_alive = job.request.keep_alive();
    std::string answer = format_answer(response, job.request.method != "HEAD", keep_alive);
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished.push_back({job.connection, std::move(answer), keep_alive});
    }
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_fd, &one, sizeof(one));
  }
}

void Server::State::set_phase(Connection& connection, Phase phase) {
  answer_slots_taken += holds_an_answer_slot(phase);
  answer_slots_taken -= holds_an_answer_slot(connection.phase);
  connection.phase = phase;
}

void Server::State::close_connection(uint64_t id) {
  const auto found = connections.find(id);
  if (found == connections.end()) return;
  set_phase(found->second, Phase::kReading);  // gives its answer slot back
  ::close(found->second.fd);
  connections.erase(found);
  hand_out_slots();
}

// The connection that has waited longest for its request, or end() if none waits for one.
std::map<uint64_t, Connection>::iterator Server::State::longest_waiting() {
  auto oldest = connections.end();
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    if (it->second.phase == Phase::kReading &&
        (oldest == connections.end() || it->second.deadline < oldest->second.deadline)) {
      oldest = it;
    }
  }
  return oldest;
}

bool Server::State::room_for_a_connection() {
  return connections.size() < limits.max_connections || longest_waiting() != connections.end();
}

void Server::State::accept_connections(Clock::time_point now, Clock::time_point& paused_until) {
  // While no connection can make room, newcomers wait in the listen backlog.
  while (room_for_a_connection()) {
    const int fd = ::accept4(listening_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) paused_until = now + kAcceptPause;
      return;
    }
    // Room is made by the connection that has waited longest for its request.
    if (connections.size() >= limits.max_connections) close_connection(longest_waiting()->first);
    const uint64_t id = next_id++;
    Connection& connection = connections[id];
    connection.fd = fd;
    connection.deadline = now + std::chrono::milliseconds(limits.request_timeout_ms);
    // A request that came with the connection is taken at once, so that the connection is no
    // longer one waiting for its request, which the next newcomers could push out.
    receive(id, connection, now);
  }
}

void Server::State::answer_now(Connection& connection, const Response& response, bool keep_alive,
                               Clock::time_point now) {
  connection.answer = format_answer(response, true, keep_alive);
  connection.sent = 0;
  connection.close_after_answer = !keep_alive;
  set_phase(connection, Phase::kWriting);
  connection.deadline = now + std::chrono::milliseconds(limits.answer_timeout_ms);
}

// Starts on the next request in `connection.received`, if a whole head is there.
void Server::State::take_request(uint64_t id, Connection& connection, Clock::time_point now) {
  const std::optional<size_t> length = head_length(connection.received);
  if (!length) {
    if (connection.received.size() > limits.max_head_bytes) {
      answer_now(connection, {431, "text/plain; charset=utf-8", "request head too long\n"}, false,
                 now);
    }
    return;
  }
  if (*length > limits.max_head_bytes) {
    answer_now(connection, {431, "text/plain; charset=utf-8", "request head too long\n"}, false,
               now);
    return;
  }
  auto parsed = parse_request_head(std::string_view(connection.received).substr(0, *length));
  connection.received.erase(0, *length);
  if (const auto* refusal = std::get_if<Refusal>(&parsed)) {
    answer_now(connection, {refusal->status, "text/plain; charset=utf-8", refusal->reason + "\n"},
               false, now);
    return;
  }
  Request& request = std::get<Request>(parsed);
  if (request.method != "GET" && request.method != "HEAD") {
    answer_now(connection, {405, "text/plain; charset=utf-8", "only GET and HEAD are served\n"},
               false, now);
    return;
  }
  connection.queued_request = std::move(request);
  set_phase(connection, Phase::kQueued);
  waiting_for_a_slot.push_back(id);
  hand_out_slots();
}

// Queued requests go to the handlers, in the order they came, while answer slots are free.
void Server::State::hand_out_slots() {
  while (answer_slots_taken < limits.max_answers && !waiting_for_a_slot.empty()) {
    const uint64_t id = waiting_for_a_slot.front();
    waiting_for_a_slot.pop_front();
    const auto found = connections.find(id);
    if (found == connections.end() || found->second.phase != Phase::kQueued) continue;
    set_phase(found->second, Phase::kHandling);
    {
      std::lock_guard<std::mutex> lock(mutex);
      jobs.push_back({id, std::move(*found->second.queued_request)});
    }
    found->second.queued_request.reset();
    job_ready.notify_one();
  }
}

void Server::State::receive(uint64_t id, Connection& connection, Clock::time_point now) {
  // At most one byte past the longest head is kept: enough to tell that it is too long.
  const size_t room =
      limits.max_head_bytes + 1 - std::min(connection.received.size(), limits.max_head_bytes + 1);
  char buffer[4096];
  const ssize_t got = ::recv(connection.fd, buffer, std::min(sizeof(buffer), room), 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (got <= 0 && room > 0) {
    close_connection(id);
    return;
  }
  connection.received.append(buffer, static_cast<size_t>(std::max<ssize_t>(got, 0)));
  take_request(id, connection, now);
}

void Server::State::send_answer(uint64_t id, Connection& connection, Clock::time_point now) {
  while (connection.sent < connection.answer.size()) {
    const ssize_t sent =
        ::send(connection.fd, connection.answer.data() + connection.sent,
               connection.answer.size() - connection.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (sent <= 0) {
      close_connection(id);
      return;
    }
    connection.sent += static_cast<size_t>(sent);
  }
  if (connection.close_after_answer) {
    close_connection(id);
    return;
  }
  connection.answer.clear();
  connection.answer.shrink_to_fit();
  set_phase(connection, Phase::kReading);
  hand_out_slots();
  connection.deadline = now + std::chrono::milliseconds(limits.request_timeout_ms);
  take_request(id, connection, now);  // a request sent before this answer was taken
}

void Server::serve(int stop_fd) {
  State& state = *state_;
  std::vector<std::thread> handlers;
  for (size_t i = 0; i < std::max<size_t>(1, state.limits.handler_threads); ++i) {
    handlers.emplace_back([&state] { state.handle_jobs(); });
  }
  Clock::time_point accept_paused_until{};
  std::vector<pollfd> polled;
  std::vector<uint64_t> polled_ids;
  int poll_error = 0;
  while (true) {
    Clock::time_point now = Clock::now();
    polled.assign({{stop_fd, POLLIN, 0}, {state.wake_fd, POLLIN, 0}});
    polled_ids.clear();
    if (now >= accept_paused_until && state.room_for_a_connection()) {
      polled.push_back({state.listening_fd, POLLIN, 0});
    }
    Clock::time_point wake_at = now + std::chrono::seconds(1);
    for (const auto& [id, connection] : state.connections) {
      const short events = connection.phase == Phase::kReading   ? POLLIN
                           : connection.phase == Phase::kWriting ? POLLOUT
                                                                 : 0;
      polled.push_back({connection.fd, events, 0});
      polled_ids.push_back(id);
      if (events != 0) wake_at = std::min(wake_at, connection.deadline);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
    if (::poll(polled.data(), polled.size(), static_cast<int>(std::max<int64_t>(0, wait))) < 0) {
      if (errno == EINTR) continue;
      poll_error = errno;
      break;
    }
    if (polled[0].revents != 0) break;
    now = Clock::now();
    if (polled[1].revents != 0) {
      uint64_t count = 0;
      [[maybe_unused]] const ssize_t drained = ::read(state.wake_fd, &count, sizeof(count));
      std::vector<Finished> finished;
      {
        std::lock_guard<std::mutex> lock(state.mutex);
        finished.swap(state.finished);
      }
      for (Finished& done : finished) {
        const auto found = state.connections.find(done.connection);
        if (found == state.connections.end()) continue;  // closed while it was handled
        Connection& connection = found->second;
        connection.answer = std::move(done.answer);
        connection.sent = 0;
        connection.close_after_answer = !done.keep_alive;
        state.set_phase(connection, Phase::kWriting);
        connection.deadline = now + std::chrono::milliseconds(state.limits.answer_timeout_ms);
        state.send_answer(done.connection, connection, now);
      }
    }
    const size_t first_connection = polled.size() - polled_ids.size();
    if (first_connection == 3 && polled[2].revents != 0) {
      state.accept_connections(now, accept_paused_until);
    }
    for (size_t i = 0; i < polled_ids.size(); ++i) {
      const short revents = polled[first_connection + i].revents;
      const auto found = state.connections.find(polled_ids[i]);
      if (revents == 0 || found == state.connections.end()) continue;
      Connection& connection = found->second;
      if (connection.phase == Phase::kReading) {
        state.receive(polled_ids[i], connection, now);
      } else if (connection.phase == Phase::kWriting) {
        state.send_answer(polled_ids[i], connection, now);
      } else if (revents & (POLLERR | POLLHUP)) {
        state.close_connection(polled_ids[i]);  // its answer, once made, is dropped
      }
    }
    for (auto it = state.connections.begin(); it != state.connections.end();) {
      const auto next = std::next(it);
      const Phase phase = it->second.phase;
      if ((phase == Phase::kReading || phase == Phase::kWriting) && now >= it->second.deadline) {
        state.close_connection(it->first);
      }
      it = next;
    }
  }
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.stopping = true;
  }
  state.job_ready.notify_all();
  for (std::thread& handler : handlers) handler.join();
  if (poll_error != 0) {
    throw std::runtime_error(std::string("cannot wait for the sockets: ") +
                             std::strerror(poll_error));
  }
}

}  // namespace vramshim::http
