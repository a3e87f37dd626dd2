#include "analyzer/live/collection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include "analyzer/control/control_client.h"

namespace vramshim::live {
namespace {

using Clock = std::chrono::steady_clock;

// Exchanges under way at once (a descriptor each): the others wait for one to end. Far below the
// descriptor limit, however many sockets a user leaves in their directory.
constexpr size_t kMaxInFlight = 64;

// One request on a connection of its own.
struct Exchange {
  size_t process;  // index into the sockets
  bool sites;      // the `sites` request, else `stats`
  std::string request;
  int fd = -1;
  bool connected = false;
  std::string answer;
  std::optional<Skipped> failure;  // set when the exchange ended without an answer
  std::string problem;
  bool started = false;
  bool done = false;
};

void finish(Exchange& exchange, Skipped failure, std::string problem) {
  exchange.failure = failure;
  exchange.problem = std::move(problem);
  exchange.done = true;
}

void try_connect(Exchange& exchange, const cli::SocketEntry& socket);

// Which exchanges are under way: at most kMaxInFlight at once, each user's in turn and each user
// holding at most an equal share of them (at least 2), so that the sockets one user leaves in
// their directory, stale or served and silent, can neither take every descriptor nor keep other
// users' processes from being asked.
class ExchangeScheduler {
 public:
  ExchangeScheduler(std::vector<Exchange>& exchanges, const std::vector<cli::SocketEntry>& sockets)
      : sockets_(sockets) {
    for (Exchange& exchange : exchanges) owners_[owner(exchange)].waiting.push_back(&exchange);
    share_ = std::max<size_t>(2, kMaxInFlight / std::max<size_t>(1, owners_.size()));
  }

  // Starts exchanges while there is room; whether it started any.
  bool start_more() {
    bool started = false;
    for (bool round = true; round && under_way_.size() < kMaxInFlight;) {
      round = false;
      for (auto& [owner, queue] : owners_) {
        if (under_way_.size() >= kMaxInFlight) break;
        if (queue.next == queue.waiting.size() || queue.in_flight >= share_) continue;
        Exchange& exchange = *queue.waiting[queue.next++];
        exchange.started = true;
        ++queue.in_flight;
        under_way_.push_back(&exchange);
        try_connect(exchange, sockets_[exchange.process]);
        round = started = true;
      }
    }
    return started;
  }

  // Gives the descriptors of the exchanges that ended back; whether any had.
  bool end_finished() {
    const size_t before = under_way_.size();
    under_way_.erase(std::remove_if(under_way_.begin(), under_way_.end(),
                                    [this](Exchange* exchange) {
                                      if (!exchange->done) return false;
                                      if (exchange->fd >= 0) ::close(exchange->fd);
                                      exchange->fd = -1;
                                      --owners_[owner(*exchange)].in_flight;
                                      return true;
                                    }),
                     under_way_.end());
    return under_way_.size() != before;
  }

  const std::vector<Exchange*>& under_way() const { return under_way_; }

 private:
  uid_t owner(const Exchange& exchange) const { return sockets_[exchange.process].owner; }

  struct Queue {
    std::vector<Exchange*> waiting;
    size_t next = 0;
    size_t in_flight = 0;
  };
  const std::vector<cli::SocketEntry>& sockets_;
  std::map<uid_t, Queue> owners_;
  size_t share_ = kMaxInFlight;
  std::vector<Exchange*> under_way_;
};

// Starts or retries the connection; sends the request once connected.
void try_connect(Exchange& exchange, const cli::SocketEntry& socket) {
  if (exchange.fd < 0) {
    exchange.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (exchange.fd < 0) {
      finish(exchange, Skipped::kFailed,
             std::string("cannot make a socket: ") + std::strerror(errno));
      return;
    }
  }
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (socket.path.size() >= sizeof(address.sun_path)) {
    finish(exchange, Skipped::kFailed, socket.path + ": the path is too long for a socket");
    return;
  }
  std::memcpy(address.sun_path, socket.path.c_str(), socket.path.size() + 1);
  if (::connect(exchange.fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno == EAGAIN || errno == EINTR) return;  // the backlog is full: tried again later
    if (errno == ECONNREFUSED || errno == ENOENT) {
      finish(exchange, Skipped::kGone, socket.path + ": nobody listens on it any more");
    } else {
      finish(exchange, Skipped::kFailed,
             "cannot connect to " + socket.path + ": " + std::strerror(errno));
    }
    return;
  }
  exchange.connected = true;
  const std::string untrusted = cli::peer_problem(exchange.fd, socket);
  if (!untrusted.empty()) {
    finish(exchange, Skipped::kUntrusted, untrusted);
    return;
  }
  const std::string line = exchange.request + "\n";  // far below the socket buffer: sent whole
  if (::send(exchange.fd, line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size())) {
    finish(exchange, Skipped::kFailed,
           socket.path + ": cannot send the request: " + std::strerror(errno));
  }
}

// Reads what is there; the exchange is done at the answer's newline or at the end of the stream.
void read_answer(Exchange& exchange, const cli::SocketEntry& socket) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(exchange.fd, buffer, sizeof(buffer));
    if (n > 0) {
      const size_t before = exchange.answer.size();
      exchange.answer.append(buffer, static_cast<size_t>(n));
      const size_t newline = exchange.answer.find('\n', before);
      if (newline != std::string::npos) {
        exchange.answer.resize(newline);
        exchange.done = true;
        return;
      }
      if (exchange.answer.size() > cli::kMaxAnswerBytes) {
        finish(exchange, Skipped::kFailed,
               socket.path + ": the answer is longer than " +
                   std::to_string(cli::kMaxAnswerBytes >> 20) + " MiB");
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (exchange.answer.empty()) {
      finish(exchange, Skipped::kFailed,
             socket.path + ": the process closed the connection without an answer");
    } else {
      exchange.done = true;
    }
    return;
  }
}

// What in a `stats` answer is not of the type the collection's readers walk through; empty if
// nothing is. (They skip a figure that is not a number themselves.)
std::string misshapen_stats(const nlohmann::json& stats) {
  const auto array_of_objects = [](const nlohmann::json& value) {
    return value.is_array() &&
           std::all_of(value.begin(), value.end(),
                       [](const nlohmann::json& item) { return item.is_object(); });
  };
  for (const char* name : {"devices", "out_of_memory"}) {
    const auto member = stats.find(name);
    if (member != stats.end() && !array_of_objects(*member)) {
      return std::string(name) + " is not an array of objects";
    }
  }
  const auto process = stats.find("process");
  if (process != stats.end() && !process->is_object()) return "process is not an object";
  return {};
}

// The answer as a JSON object with "ok": true (and, to `stats`, of the shape its readers expect),
// or nullopt with *problem set.
std::optional<nlohmann::json> checked_answer(const Exchange& exchange,
                                             const cli::SocketEntry& socket, std::string* problem) {
  std::optional<nlohmann::json> parsed = cli::parse_answer(exchange.answer, problem);
  if (!parsed) {
    *problem = socket.path + ": the answer to " + exchange.request + " " + *problem;
    return std::nullopt;
  }
  const std::string failure = cli::answer_failure(*parsed);
  if (!failure.empty()) {
    *problem = "pid " + std::to_string(socket.pid) + ": " + exchange.request + ": " + failure;
    return std::nullopt;
  }
  const std::string misshapen = exchange.sites ? std::string() : misshapen_stats(*parsed);
  if (!misshapen.empty()) {
    *problem = socket.path + ": the answer to " + exchange.request + " is misshapen: " + misshapen;
    return std::nullopt;
  }
  return parsed;
}

}  // namespace

const char* skipped_name(Skipped reason) {
  switch (reason) {
    case Skipped::kSilent:
      return "silent";
    case Skipped::kGone:
      return "gone";
    case Skipped::kUntrusted:
      return "untrusted";
    case Skipped::kFailed:
      return "failed";
  }
  return "failed";
}

Collection collect(const std::vector<cli::SocketEntry>& sockets, const CollectOptions& options) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(options.budget_ms);
  std::vector<Exchange> exchanges;
  for (size_t index = 0; index < sockets.size(); ++index) {
    exchanges.push_back(Exchange{index, false, "stats"});
    if (options.top_sites > 0) {
      exchanges.push_back(Exchange{index, true, "sites " + std::to_string(options.top_sites)});
    }
  }
  ExchangeScheduler scheduler(exchanges, sockets);
  std::vector<pollfd> fds;
  std::vector<Exchange*> polled;
  for (;;) {
    // Ended exchanges give their descriptor back at once, and their turn to the next ones; none
    // starts once the budget is spent.
    if (Clock::now() < deadline) {
      while (scheduler.start_more() && scheduler.end_finished()) {
      }
    }
    scheduler.end_finished();
    const std::vector<Exchange*>& under_way = scheduler.under_way();
    if (under_way.empty()) break;
    fds.clear();
    polled.clear();
    bool waiting_to_connect = false;
    for (Exchange* exchange : under_way) {
      if (!exchange->connected) {
        waiting_to_connect = true;
        continue;
      }
      fds.push_back({exchange->fd, POLLIN, 0});
      polled.push_back(exchange);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    // A full backlog is retried every 10 ms.
    const int timeout = static_cast<int>(waiting_to_connect ? std::min<long>(left, 10) : left);
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) break;
    for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_answer(*polled[i], sockets[polled[i]->process]);
    }
    for (Exchange* exchange : under_way) {
      if (!exchange->done && !exchange->connected) {
        try_connect(*exchange, sockets[exchange->process]);
      }
    }
  }

  Collection collection;
  std::vector<std::optional<nlohmann::json>> stats(sockets.size()), sites(sockets.size());
  std::vector<std::optional<std::pair<Skipped, std::string>>> skipped(sockets.size());
  for (Exchange& exchange : exchanges) {
    if (exchange.fd >= 0) ::close(exchange.fd);
    const cli::SocketEntry& socket = sockets[exchange.process];
    std::optional<std::pair<Skipped, std::string>> failure;
    if (!exchange.started) {
      failure.emplace(Skipped::kSilent,
                      "pid " + std::to_string(socket.pid) + " was not asked " + exchange.request +
                          " within " + std::to_string(options.budget_ms) +
                          " ms: " + std::to_string(kMaxInFlight) +
                          " requests are under way at a time, each user's in turn");
    } else if (!exchange.done) {
      failure.emplace(Skipped::kSilent, "pid " + std::to_string(socket.pid) + " did not answer " +
                                            exchange.request + " within " +
                                            std::to_string(options.budget_ms) + " ms");
    } else if (exchange.failure) {
      failure.emplace(*exchange.failure, exchange.problem);
    } else {
      std::string problem;
      std::optional<nlohmann::json> answer = checked_answer(exchange, socket, &problem);
      if (!answer) {
        failure.emplace(Skipped::kFailed, problem);
      } else if (exchange.sites) {
        sites[exchange.process] = std::move(*answer);
      } else {
        stats[exchange.process] = std::move(*answer);
      }
    }
    // The `stats` exchange decides whether the process is in; a failed `sites` only leaves its
    // sites out.
    if (failure && !exchange.sites) skipped[exchange.process] = std::move(failure);
  }
  for (size_t index = 0; index < sockets.size(); ++index) {
    if (skipped[index]) {
      ++collection.skipped[static_cast<size_t>(skipped[index]->first)];
      if (skipped[index]->first == Skipped::kSilent)
        collection.silent.push_back(sockets[index].pid);
      collection.problems.push_back(skipped[index]->second);
      continue;
    }
    if (!stats[index]) continue;
    ProcessSample sample{sockets[index], std::move(*stats[index]), nullptr, nullptr};
    if (sites[index] && (*sites[index]).contains("sites") && (*sites[index])["sites"].is_array()) {
      sample.sites = std::move((*sites[index])["sites"]);
      // A process may answer more than it was asked: the rest would be series of its own.
      const size_t asked = static_cast<size_t>(std::max(options.top_sites, 0));
      if (sample.sites.size() > asked) {
        sample.sites.erase(sample.sites.begin() + static_cast<std::ptrdiff_t>(asked),
                           sample.sites.end());
      }
      const nlohmann::json& live_sites = (*sites[index]).value("live_sites", nlohmann::json());
      if (live_sites.is_number_unsigned()) sample.live_sites = live_sites;
    }
    collection.processes.push_back(std::move(sample));
  }
  collection.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  collection.ended_unix_seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return collection;
}

}  // namespace vramshim::live
