#include "shim/control/client_connections.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "shim/control/dispatch.h"
#include "shim/control/request.h"

namespace vramshim::control {
namespace {

bool peer_allowed(int fd) {
  ucred peer;
  socklen_t length = sizeof(peer);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return false;
  return peer.uid == 0 || peer.uid == ::geteuid();
}

}  // namespace

std::int64_t monotonic_ms() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

bool ClientConnections::accept_from(int listen_fd, std::int64_t now_ms) {
  while (!full()) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (!peer_allowed(fd)) {
      // A short line: it fits the socket's buffer at once, or the peer goes without it.
      // Closed at once: not moved out of the program's way as a kept connection is.
      Connection refused{support::OwnedDescriptor::recognize(fd), now_ms + kTimeLimitMs, {}, {}, 0};
      start_answer(refused, error_response("permission denied"));
      refused.descriptor.close();
      continue;
    }
    Connection connection{support::OwnedDescriptor::adopt(fd), now_ms + kTimeLimitMs, {}, {}, 0};
    if (connection.descriptor.empty()) continue;
    connections_.push_back(std::move(connection));
  }
  return true;
}

void ClientConnections::add_poll_fds(std::vector<pollfd>& fds) const {
  for (const Connection& connection : connections_) {
    const short events = connection.answer.empty() ? POLLIN : POLLOUT;
    fds.push_back(pollfd{connection.descriptor.fd(), events, 0});
  }
}

void ClientConnections::service(const std::vector<pollfd>& fds, size_t first, std::int64_t now_ms) {
  // fds[first + i] belongs to connections_[i] as they were when add_poll_fds ran; accept_from only
  // appends, so the first fds.size() - first connections still line up.
  std::vector<Connection> still_open;
  still_open.reserve(connections_.size());
  for (size_t i = 0; i < connections_.size(); ++i) {
    Connection& connection = connections_[i];
    if (!connection.descriptor.still_ours()) continue;  // the program's number now: left alone
    const size_t slot = first + i;
    Progress progress = Progress::kOpen;
    if (slot < fds.size() && fds[slot].fd == connection.descriptor.fd() && fds[slot].revents != 0) {
      progress = connection.answer.empty() ? read_request(connection) : send_more(connection);
    }
    if (progress == Progress::kOpen && now_ms >= connection.deadline_ms) {
      if (connection.answer.empty()) {
        progress = start_answer(connection, error_response("timed out waiting for a request line"));
      } else {
        progress = Progress::kDone;  // a client that does not read its answer in time loses it
      }
    }
    if (progress == Progress::kDone) {
      connection.descriptor.close();
    } else {
      still_open.push_back(std::move(connection));
    }
  }
  connections_ = std::move(still_open);
}

ClientConnections::Progress ClientConnections::read_request(Connection& connection) {
  // The longest line and the '\r' of a CRLF end, and one byte more, to tell a line of exactly the
  // limit from a longer one.
  constexpr size_t kCapacity = kMaxRequestBytes + 2;
  for (;;) {
    char buffer[kCapacity];
    const size_t room = kCapacity - connection.received.size();
    const ssize_t count = ::read(connection.descriptor.fd(), buffer, room);
    if (count < 0) {
      if (errno == EINTR) continue;
      // A broken connection is just closed.
      return errno == EAGAIN || errno == EWOULDBLOCK ? Progress::kOpen : Progress::kDone;
    }
    if (count == 0) {
      // The client closed its end without a newline: what it sent is the request, if anything.
      if (connection.received.empty()) return Progress::kDone;
      return start_answer(connection, respond_(connection.received));
    }
    const size_t old_size = connection.received.size();
    connection.received.append(buffer, static_cast<size_t>(count));
    const size_t newline = connection.received.find('\n', old_size);
    if (newline != std::string::npos) {
      return start_answer(connection,
                          respond_(std::string_view(connection.received).substr(0, newline)));
    }
    if (connection.received.size() >= kCapacity) {
      return start_answer(connection, error_response("request longer than 4096 bytes"));
    }
  }
}

ClientConnections::Progress ClientConnections::start_answer(Connection& connection,
                                                            const std::string& response) {
  connection.answer = response + "\n";
  connection.received.clear();
  connection.received.shrink_to_fit();
  connection.sent = 0;
  // One limit for the whole answer, from now (building it may have taken a while): a client that
  // reads a little now and then must not keep its connection, and the answer's memory, longer.
  connection.deadline_ms = monotonic_ms() + kSendLimitMs;
  return send_more(connection);
}

ClientConnections::Progress ClientConnections::send_more(Connection& connection) {
  const std::string& line = connection.answer;
  while (connection.sent < line.size()) {
    const ssize_t count = ::send(connection.descriptor.fd(), line.data() + connection.sent,
                                 line.size() - connection.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count > 0) {
      connection.sent += static_cast<size_t>(count);
    } else if (count < 0 && errno == EINTR) {
      continue;
    } else if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Progress::kOpen;  // the poll loop goes on once the client made room
    } else {
      return Progress::kDone;
    }
  }
  return Progress::kDone;
}

std::int64_t ClientConnections::ms_until_next_deadline(std::int64_t now_ms) const {
  std::int64_t earliest = -1;
  for (const Connection& connection : connections_) {
    const std::int64_t wait = connection.deadline_ms > now_ms ? connection.deadline_ms - now_ms : 0;
    if (earliest < 0 || wait < earliest) earliest = wait;
  }
  return earliest;
}

void ClientConnections::close_all() {
  for (Connection& connection : connections_) connection.descriptor.close();
  connections_.clear();
}

}  // namespace vramshim::control
