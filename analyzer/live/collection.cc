#include "analyzer/live/collection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "analyzer/control/checked_socket_file.h"
#include "analyzer/control/control_client.h"
#include "analyzer/live/shimmed_sockets.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/model/report.h"

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
  std::string answer;                    // as read; freed once parsed
  std::optional<nlohmann::json> parsed;  // the answer, checked
  size_t held_bytes = 0;                 // what answer and parsed take, charged to the AnswerBudget
  std::optional<Skipped> failure;        // set when the exchange ended without an answer
  std::string problem;
  bool started = false;
  bool done = false;
};

// The memory the answers of a collection take, by user and in all (kMaxAnswerBytesPerUser,
// kMaxAnswerBytesPerCollection).
class AnswerBudget {
 public:
  // Charges `bytes` more to `owner`; false, charging nothing, past either bound. Root's and the
  // CLI's own user's answers are held to their user's bound only: other users, together, must not
  // be able to use up what all may take first and so leave them out.
  bool take(uid_t owner, size_t bytes) {
    size_t& used = by_user_[owner];
    const bool shared_bound = owner != 0 && owner != ::geteuid();
    if (used + bytes > kMaxAnswerBytesPerUser ||
        (shared_bound && total_ + bytes > kMaxAnswerBytesPerCollection))
      return false;
    used += bytes;
    total_ += bytes;
    return true;
  }
  void give_back(uid_t owner, size_t bytes) {
    by_user_[owner] -= bytes;
    total_ -= bytes;
  }

 private:
  std::map<uid_t, size_t> by_user_;
  size_t total_ = 0;
};

void finish(Exchange& exchange, Skipped failure, std::string problem) {
  exchange.failure = failure;
  exchange.problem = std::move(problem);
  exchange.done = true;
}

// Ends the exchange as kOversized, and frees what it held.
void drop_oversized(Exchange& exchange, AnswerBudget& budget, const cli::SocketEntry& socket,
                    std::string problem) {
  std::string().swap(exchange.answer);
  exchange.parsed.reset();
  budget.give_back(socket.owner, exchange.held_bytes);
  exchange.held_bytes = 0;
  finish(exchange, Skipped::kOversized, std::move(problem));
}

std::string budget_problem(const cli::SocketEntry& socket, const std::string& request) {
  const bool own = socket.owner == 0 || socket.owner == ::geteuid();
  return "pid " + std::to_string(socket.pid) + ": the answer to " + request +
         " passes the memory the answers of uid " + std::to_string(socket.owner) + " (" +
         std::to_string(kMaxAnswerBytesPerUser >> 20) + " MiB)" +
         (own ? std::string()
              : " or of all other users (" + std::to_string(kMaxAnswerBytesPerCollection >> 20) +
                    " MiB)") +
         " may take in a collection";
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
  const cli::CheckedSocketFile file(socket);
  if (!file.problem().empty()) {
    if (file.gone()) {
      finish(exchange, Skipped::kGone, socket.path + ": nobody listens on it any more");
    } else {
      finish(exchange, file.replaced() ? Skipped::kUntrusted : Skipped::kFailed, file.problem());
    }
    return;
  }
  if (file.connect(exchange.fd) != 0) {
    if (errno == EAGAIN || errno == EINTR) return;  // the backlog is full: tried again later
    if (errno == ECONNREFUSED) {
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
void read_answer(Exchange& exchange, const cli::SocketEntry& socket, AnswerBudget& budget) {
  const size_t longest = exchange.sites ? kMaxSitesAnswerBytes : kMaxStatsAnswerBytes;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(exchange.fd, buffer, sizeof(buffer));
    if (n > 0) {
      const size_t before = exchange.answer.size();
      const size_t newline = std::string_view(buffer, static_cast<size_t>(n)).find('\n');
      const size_t taken = newline == std::string::npos ? static_cast<size_t>(n) : newline;
      if (before + taken > longest) {
        drop_oversized(exchange, budget, socket,
                       socket.path + ": the answer to " + exchange.request + " is longer than " +
                           std::to_string(longest >> 20) + " MiB");
        return;
      }
      const size_t capacity = exchange.answer.capacity();
      exchange.answer.append(buffer, taken);
      const size_t grown = exchange.answer.capacity() - capacity;
      if (!budget.take(socket.owner, grown)) {
        drop_oversized(exchange, budget, socket, budget_problem(socket, exchange.request));
        return;
      }
      exchange.held_bytes += grown;
      if (newline != std::string::npos) {
        exchange.done = true;
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

// About the memory a parsed answer takes: each value, a member's key and node, a string's text.
size_t parsed_bytes(const nlohmann::json& value) {
  constexpr size_t kNodeBytes = 64;  // a member's map node, a container's or string's header
  size_t bytes = sizeof(nlohmann::json);
  if (value.is_string()) {
    bytes += kNodeBytes + value.get_ref<const std::string&>().capacity();
  } else if (value.is_object()) {
    bytes += kNodeBytes;
    for (auto member = value.begin(); member != value.end(); ++member) {
      bytes += kNodeBytes + member.key().capacity() + parsed_bytes(member.value());
    }
  } else if (value.is_array()) {
    bytes += kNodeBytes;
    for (const nlohmann::json& item : value) bytes += parsed_bytes(item);
  }
  return bytes;
}

// Keeps, of "devices" and "out_of_memory" (arrays of objects), the first entry of each device;
// why the answer is refused when one names no device a machine can have, or lists more than
// kMaxDevicesPerProcess (each device is series of the exporter); empty if it is not.
std::string checked_devices(nlohmann::json& stats) {
  for (const char* name : {"devices", "out_of_memory"}) {
    const auto member = stats.find(name);
    if (member == stats.end()) continue;
    if (member->size() > kMaxDevicesPerProcess) {
      return std::string(name) + " lists more than " + std::to_string(kMaxDevicesPerProcess) +
             " devices";
    }
    std::set<int> seen;
    nlohmann::json kept = nlohmann::json::array();
    for (nlohmann::json& entry : *member) {
      const std::optional<int> device = device_number(entry);
      if (!device) {
        return std::string(name) + " holds a device that is not an integer from 0 to " +
               std::to_string(analyzer::kMaxDeviceNumber - 1);
      }
      if (seen.insert(*device).second) kept.push_back(std::move(entry));
    }
    *member = std::move(kept);
  }
  return {};
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
  std::string misshapen;
  if (!exchange.sites) {
    misshapen = misshapen_stats(*parsed);
    if (misshapen.empty()) misshapen = checked_devices(*parsed);
  }
  if (!misshapen.empty()) {
    *problem = socket.path + ": the answer to " + exchange.request + " is misshapen: " + misshapen;
    return std::nullopt;
  }
  return parsed;
}

// Parses the answer of a done exchange as soon as it came, and frees its text: the memory it
// holds from then on is its parsed answer's, charged instead. A `sites` answer keeps its first
// `top_sites` sites and "live_sites" only: a process may answer more than it was asked, and the
// rest would be series of its own.
void settle(Exchange& exchange, const cli::SocketEntry& socket, AnswerBudget& budget,
            int top_sites) {
  std::string problem;
  std::optional<nlohmann::json> answer = checked_answer(exchange, socket, &problem);
  std::string().swap(exchange.answer);
  budget.give_back(socket.owner, exchange.held_bytes);
  exchange.held_bytes = 0;
  if (!answer) {
    finish(exchange, Skipped::kFailed, problem);
    return;
  }
  if (exchange.sites) {
    nlohmann::json kept = {{"sites", nullptr}, {"live_sites", nullptr}};
    if (answer->contains("sites") && (*answer)["sites"].is_array()) {
      nlohmann::json& sites = (*answer)["sites"];
      const size_t asked = static_cast<size_t>(std::max(top_sites, 0));
      if (sites.size() > asked) {
        sites.erase(sites.begin() + static_cast<std::ptrdiff_t>(asked), sites.end());
      }
      kept["sites"] = std::move(sites);
    }
    const nlohmann::json& live_sites = answer->value("live_sites", nlohmann::json());
    if (live_sites.is_number_unsigned()) kept["live_sites"] = live_sites;
    answer = std::move(kept);
  }
  const size_t bytes = parsed_bytes(*answer);
  if (!budget.take(socket.owner, bytes)) {
    drop_oversized(exchange, budget, socket, budget_problem(socket, exchange.request));
    return;
  }
  exchange.held_bytes = bytes;
  exchange.parsed = std::move(answer);
}

// A non-negative integer, parsed (unsigned) or made (signed); nullopt for anything else.
std::optional<std::uint64_t> non_negative_integer(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> answer_figure(const nlohmann::json& value) {
  const std::optional<std::uint64_t> figure = non_negative_integer(value);
  if (!figure || *figure > static_cast<std::uint64_t>(analyzer::kFigureLimit)) return std::nullopt;
  return figure;
}

std::optional<std::uint64_t> answer_figure(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return std::nullopt;
  const auto member = object.find(name);
  return member == object.end() ? std::nullopt : answer_figure(*member);
}

std::uint64_t saturating_figure_sum(std::uint64_t a, std::uint64_t b) {
  const auto limit = static_cast<std::uint64_t>(analyzer::kFigureLimit);
  return std::min(limit, std::min(a, limit) + std::min(b, limit));
}

std::optional<std::uint64_t> summed_device_figure(const nlohmann::json& stats, const char* name) {
  std::uint64_t sum = 0;
  const nlohmann::json devices = stats.value("devices", nlohmann::json::array());
  for (const nlohmann::json& device : devices.is_array() ? devices : nlohmann::json::array()) {
    if (!device.is_object() || !device.contains(name)) continue;
    const std::optional<std::uint64_t> value = answer_figure(device[name]);
    if (!value) return std::nullopt;
    sum = saturating_figure_sum(sum, *value);
  }
  return sum;
}

std::optional<int> device_number(const nlohmann::json& entry) {
  if (!entry.is_object()) return std::nullopt;
  const auto device = entry.find("device");
  if (device == entry.end()) return std::nullopt;
  const std::optional<std::uint64_t> number = non_negative_integer(*device);
  if (!number || *number >= static_cast<std::uint64_t>(analyzer::kMaxDeviceNumber))
    return std::nullopt;
  return static_cast<int>(*number);
}

size_t Collection::skipped_count(Skipped reason) const {
  size_t count = 0;
  for (const auto& [owner, counts] : skipped) count += counts[static_cast<size_t>(reason)];
  return count;
}

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
    case Skipped::kOversized:
      return "oversized";
  }
  return "failed";
}

namespace {

// Removes the sockets of `gone` processes whose directory is trusted for their owner, as `ps`
// does (cli::remove_if_stale), at most kMaxRemovedPerCollection: left there, each would be asked
// and counted as gone at every collection, and, past SocketDirectory::kMaxListed of its user's,
// keep the processes listed after it from being asked at all.
void remove_stale(const std::vector<const cli::SocketEntry*>& gone) {
  for (size_t index = 0; index < gone.size() && index < kMaxRemovedPerCollection; ++index) {
    const cli::SocketEntry& socket = *gone[index];
    const cli::SocketDirectory directory(socket.path.substr(0, socket.path.rfind('/')),
                                         socket.owner);
    if (directory.trusted()) cli::remove_if_stale(directory, socket);
  }
}

}  // namespace

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
  AnswerBudget budget;
  std::vector<pollfd> fds;
  std::vector<Exchange*> polled;
  for (;;) {
    // Ended exchanges give their descriptor back at once, and their turn to the next ones; none
    // starts once the budget is spent.
    if (Clock::now() < deadline) {
      // Until nothing more starts: an exchange may end as it starts (a refused connection), and
      // its turn must go to the next, or the loop below could find none under way with some never
      // asked.
      do {
        scheduler.end_finished();
      } while (Clock::now() < deadline && scheduler.start_more());
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
    // A full backlog is retried every 10 ms. Once the budget is spent, the answers already there
    // are still read (starting the others may have taken all of it).
    const int timeout =
        left <= 0 ? 0 : static_cast<int>(waiting_to_connect ? std::min<long>(left, 10) : left);
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) break;
    for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Exchange& exchange = *polled[i];
      const cli::SocketEntry& socket = sockets[exchange.process];
      read_answer(exchange, socket, budget);
      if (exchange.done && !exchange.failure) settle(exchange, socket, budget, options.top_sites);
    }
    if (left <= 0) break;
    for (Exchange* exchange : under_way) {
      if (!exchange->done && !exchange->connected) {
        try_connect(*exchange, sockets[exchange->process]);
      }
    }
  }

  Collection collection;
  for (const cli::SocketEntry& socket : sockets) collection.skipped[socket.owner];
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
    } else if (exchange.sites) {
      sites[exchange.process] = std::move(exchange.parsed);
    } else {
      stats[exchange.process] = std::move(exchange.parsed);
    }
    // The `stats` exchange decides whether the process is in; a failed `sites` only leaves its
    // sites out, saying so.
    if (failure && !exchange.sites) skipped[exchange.process] = std::move(failure);
    if (failure && exchange.sites)
      collection.problems.push_back(failure->second + " (its sites left out)");
  }
  std::set<ProcessKey> collected;
  std::vector<const cli::SocketEntry*> gone;
  for (size_t index = 0; index < sockets.size(); ++index) {
    if (skipped[index]) {
      ++collection.skipped[sockets[index].owner][static_cast<size_t>(skipped[index]->first)];
      if (skipped[index]->first == Skipped::kGone) gone.push_back(&sockets[index]);
      if (skipped[index]->first == Skipped::kSilent)
        collection.silent.emplace_back(sockets[index].owner, sockets[index].pid);
      collection.problems.push_back(skipped[index]->second);
      continue;
    }
    if (!stats[index]) continue;
    // One process reached through sockets in two directories (XDG_RUNTIME_DIR's and /tmp's): the
    // peer check proved both served by this pid of this uid.
    if (!collected.emplace(sockets[index].owner, sockets[index].pid).second) continue;
    ProcessSample sample{sockets[index], std::move(*stats[index]), nullptr, nullptr};
    if (sites[index]) {
      sample.sites = std::move((*sites[index])["sites"]);
      sample.live_sites = std::move((*sites[index])["live_sites"]);
    }
    collection.processes.push_back(std::move(sample));
  }
  remove_stale(gone);
  collection.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  collection.ended_unix_seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return collection;
}

Collection collect_all(const std::string& only_directory, const CollectOptions& options,
                       std::vector<std::string>* refused, std::set<uid_t>* cut) {
  const Clock::time_point listing_began = Clock::now();
  const std::vector<cli::SocketEntry> sockets = shimmed_sockets(only_directory, refused, cut);
  const double listing_seconds =
      std::chrono::duration<double>(Clock::now() - listing_began).count();
  Collection collection = collect(sockets, options);
  collection.seconds += listing_seconds;
  return collection;
}

}  // namespace vramshim::live
