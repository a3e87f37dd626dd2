// The control socket's accepted connections: each reads one request line and gets one response
// line, within a time limit, so that a silent or slow client never holds up the others.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vramshim::control {

class ClientConnections {
 public:
  // Connections served at once; more wait in the listen backlog.
  static constexpr size_t kMaxConnections = 16;
  // From accept to the response: a client that sends no full line by then is answered with an
  // error.
  static constexpr std::int64_t kTimeLimitMs = 2000;

  // Answers a request line (newline removed) with a response line (newline added by the caller).
  using Responder = std::function<std::string(std::string_view line)>;

  explicit ClientConnections(Responder respond) : respond_(std::move(respond)) {}
  ~ClientConnections() { close_all(); }
  ClientConnections(const ClientConnections&) = delete;
  ClientConnections& operator=(const ClientConnections&) = delete;

  bool full() const { return connections_.size() >= kMaxConnections; }

  // Accepts what is pending on `listen_fd` while there is room. A peer whose uid is neither ours
  // (the effective uid) nor root gets {"ok":false,"error":"permission denied"} and is closed at
  // once. Returns false if accepting failed for want of resources (EMFILE…): the caller should
  // then stop polling the listening socket for a while instead of spinning on it.
  bool accept_from(int listen_fd, std::int64_t now_ms);

  // Appends one pollfd per open connection, in order, for service().
  void add_poll_fds(std::vector<pollfd>& fds) const;

  // Reads from the connections whose pollfds (as added by add_poll_fds, starting at fds[first]) are
  // ready, answers complete, oversized and expired requests, and closes answered connections.
  void service(const std::vector<pollfd>& fds, size_t first, std::int64_t now_ms);

  // Milliseconds until the earliest time limit runs out, or -1 with no connection open.
  std::int64_t ms_until_next_deadline(std::int64_t now_ms) const;

  void close_all();

 private:
  struct Connection {
    int fd;
    std::int64_t deadline_ms;
    std::string received;
  };

  // Reads what is available; returns true when the connection was answered (and must be closed).
  bool read_and_maybe_answer(Connection& connection);
  void answer(const Connection& connection, const std::string& response) const;

  Responder respond_;
  std::vector<Connection> connections_;
};

// CLOCK_MONOTONIC in milliseconds.
std::int64_t monotonic_ms();

}  // namespace vramshim::control
