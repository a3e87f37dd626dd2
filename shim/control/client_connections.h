// The control socket's accepted connections: each reads one request line and gets one response
// line, within time limits, so that a silent or slow client never holds up the others: reading
// and sending never wait, the poll loop carries both on.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shim/support/owned_descriptor.h"

namespace vramshim::control {

class ClientConnections {
 public:
  // Connections served at once; more wait in the listen backlog.
  static constexpr size_t kMaxConnections = 16;
  // From accept to the response: a client that sends no full line by then is answered with an
  // error.
  static constexpr std::int64_t kTimeLimitMs = 2000;
  // From the response to its last byte sent: a client that does not read its answer by then loses
  // it.
  static constexpr std::int64_t kSendLimitMs = 500;

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

  // Appends one pollfd per open connection, in order, for service(): readable while it reads its
  // request, writable while its answer is being sent.
  void add_poll_fds(std::vector<pollfd>& fds) const;

  // Reads from and sends to the connections whose pollfds (as added by add_poll_fds, starting at
  // fds[first]) are ready, answers complete, oversized and expired requests, and closes the
  // connections whose answer is sent or whose time ran out. A connection whose descriptor the
  // program closed (and perhaps reused) is dropped without a read, a write or a close.
  void service(const std::vector<pollfd>& fds, size_t first, std::int64_t now_ms);

  // Milliseconds until the earliest time limit runs out, or -1 with no connection open.
  std::int64_t ms_until_next_deadline(std::int64_t now_ms) const;

  void close_all();

 private:
  struct Connection {
    support::OwnedDescriptor descriptor;
    std::int64_t deadline_ms;  // for the request line, then for sending the answer
    std::string received;
    std::string answer;  // empty while reading; the response line being sent
    size_t sent = 0;
  };
  enum class Progress { kOpen, kDone };

  // Reads what is available, and starts the answer once the request is complete (or broken).
  Progress read_request(Connection& connection);
  // Starts sending `response` (a newline is added), within kSendLimitMs from now; kDone once all of
  // it is sent or sending failed.
  Progress start_answer(Connection& connection, const std::string& response);
  // Sends what the client has room for, without waiting.
  static Progress send_more(Connection& connection);

  Responder respond_;
  std::vector<Connection> connections_;
};

// CLOCK_MONOTONIC in milliseconds.
std::int64_t monotonic_ms();

}  // namespace vramshim::control
