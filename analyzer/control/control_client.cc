#include "analyzer/control/control_client.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "analyzer/control/checked_socket_file.h"
#include "analyzer/control/refused_directories.h"
#include "analyzer/control/socket_directory_names.h"
#include "analyzer/render/terminal_safe.h"
#include "shim/control/socket_path.h"

namespace vramshim::cli {
namespace {

// A client socket connected to `file`, or -1 with errno set. A listener whose backlog is full (a
// stopped or stuck process) is tried again every 10 ms until wait_ms ran out, then EAGAIN: a
// blocking connect would wait for it without end, and Linux fails a non-blocking connect to a Unix
// socket at once (EAGAIN, never EINPROGRESS), so there is nothing to poll for. The socket stays
// non-blocking.
int connect_unix(const CheckedSocketFile& file, int wait_ms) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (file.connect(fd) != 0) {
    const bool again = errno == EAGAIN || errno == EINTR;
    if (!again || std::chrono::steady_clock::now() >= deadline) {
      const int saved = again ? EAGAIN : errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fd;
}

// Whether the process that owned a socket is gone: no such pid, nothing at the socket's name, or
// nobody accepts on the socket. One try: a full backlog (EAGAIN) has a listener behind it, so it
// is not stale; nor is a socket replaced since it was checked (ask() says so), which is not ours
// to remove.
bool socket_is_stale(const SocketEntry& entry) {
  if (::kill(entry.pid, 0) != 0 && errno == ESRCH) return true;
  const CheckedSocketFile file(entry);
  if (!file.problem().empty()) return file.gone();
  const int fd = connect_unix(file, 0);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == ECONNREFUSED;
}

// Refusals name directories and sockets from the environment and other users' directories.
void warn(const std::string& message) { analyzer::print_diagnostic(message); }

}  // namespace

namespace {

// The shape of an answer, measured before it is built: nlohmann's parser with a callback spends
// time in proportion to the values already built for every object it ends (16 MiB of "[{},{},…]":
// hours), and building what a later check refuses costs memory first.
class AnswerShape : public nlohmann::json::json_sax_t {
 public:
  enum class Verdict { kFits, kTooDeep, kTooManyValues, kMalformed };
  Verdict verdict() const { return verdict_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    verdict_ = Verdict::kMalformed;
    return false;
  }

 private:
  bool value() {
    if (++values_ <= kMaxAnswerValues) return true;
    verdict_ = Verdict::kTooManyValues;
    return false;
  }
  bool open() {
    if (++depth_ > kMaxAnswerDepth) {
      verdict_ = Verdict::kTooDeep;
      return false;
    }
    return value();
  }
  bool close() {
    --depth_;
    return true;
  }

  Verdict verdict_ = Verdict::kFits;
  int depth_ = 0;
  size_t values_ = 0;
};

}  // namespace

std::optional<nlohmann::json> parse_answer(const std::string& line, std::string* problem) {
  // The parser takes a NUL byte for the end of the text, which JSON has no place for.
  if (line.find('\0') != std::string::npos) {
    *problem = "is not a JSON object";
    return std::nullopt;
  }
  AnswerShape shape;
  nlohmann::json::sax_parse(line, &shape, nlohmann::json::input_format_t::json, false);
  switch (shape.verdict()) {
    case AnswerShape::Verdict::kTooDeep:
      *problem = "is nested deeper than " + std::to_string(kMaxAnswerDepth) + " levels";
      return std::nullopt;
    case AnswerShape::Verdict::kTooManyValues:
      *problem = "holds more than " + std::to_string(kMaxAnswerValues) + " values";
      return std::nullopt;
    case AnswerShape::Verdict::kMalformed:
    case AnswerShape::Verdict::kFits:
      break;
  }
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    *problem = "is not a JSON object";
    return std::nullopt;
  }
  return parsed;
}

std::string answer_failure(const nlohmann::json& answer) {
  const auto ok = answer.find("ok");
  if (ok == answer.end() || !ok->is_boolean()) return "the answer's \"ok\" is not true or false";
  if (ok->get<bool>()) return {};
  const auto error = answer.find("error");
  return error != answer.end() && error->is_string() ? printable(error->get<std::string>())
                                                     : "request failed";
}

std::string printable(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\t') c = '?';  // one line, one column
  }
  return analyzer::terminal_safe(text);
}

std::vector<std::string> socket_directories(const std::string& only) {
  if (!only.empty()) return {only};
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  std::vector<std::string> directories =
      control::socket_directories(runtime_dir != nullptr ? runtime_dir : "", ::geteuid());
  // Anyone may make any number of names /tmp/vramshim-UID.*: each is looked at once, in a set.
  std::set<std::string> listed(directories.begin(), directories.end());
  for (const auto& [path, uid] : tmp_socket_directories(::geteuid())) {
    if (listed.insert(path).second) directories.push_back(path);
  }
  return directories;
}

bool remove_if_stale(const SocketDirectory& directory, const SocketEntry& entry) {
  return socket_is_stale(entry) && directory.remove(entry);
}

std::vector<SocketEntry> live_sockets(const std::vector<std::string>& directories, bool* cut) {
  std::vector<SocketEntry> live;
  RefusedDirectories untrusted;
  for (const std::string& path : directories) {
    const SocketDirectory directory(path);
    if (directory.missing()) continue;
    if (!directory.trusted()) {
      untrusted.add(::geteuid(), directory.problem());
      continue;
    }
    std::vector<SocketEntry> listed_live;
    std::vector<std::string> refused;
    bool listing_cut = false;
    // Stale sockets listed first may hide live ones past the cut: once removed, they are not.
    for (bool removed = true; removed;) {
      listed_live.clear();
      refused.clear();
      listing_cut = false;
      removed = false;
      for (const SocketEntry& entry :
           directory.sockets(&refused, SocketDirectory::kMaxListed, &listing_cut)) {
        if (!socket_is_stale(entry)) {
          listed_live.push_back(entry);
        } else if (directory.remove(entry)) {
          removed = listing_cut;
        }
      }
    }
    live.insert(live.end(), listed_live.begin(), listed_live.end());
    for (const std::string& why : refused) warn(why + "; ignored");
    if (listing_cut && cut != nullptr) *cut = true;
  }
  for (const std::string& line : untrusted.lines()) warn(line);
  std::sort(live.begin(), live.end(),
            [](const SocketEntry& a, const SocketEntry& b) { return a.pid < b.pid; });
  return live;
}

SocketEntry socket_for_pid(pid_t pid) {
  std::vector<std::string> refusals;
  for (const std::string& path : socket_directories()) {
    const SocketDirectory directory(path);
    if (!directory.trusted()) {
      if (!directory.missing()) refusals.push_back(directory.problem());
      continue;
    }
    std::string refused;
    if (const std::optional<SocketEntry> socket = directory.socket_of(pid, &refused)) {
      for (const std::string& why : refusals) warn(why + "; ignored");
      return *socket;
    }
    if (!refused.empty()) refusals.push_back(refused);
  }
  if (refusals.empty()) {
    throw std::runtime_error("no vramshim socket for pid " + std::to_string(pid) +
                             " (is it running under vramshim?)");
  }
  std::string why;
  for (const std::string& refusal : refusals) why += (why.empty() ? "" : "; ") + refusal;
  throw std::runtime_error("no trusted vramshim socket for pid " + std::to_string(pid) + ": " +
                           why);
}

nlohmann::json ask(const SocketEntry& socket, const std::string& request, int timeout_ms) {
  const std::string& socket_path = socket.path;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const CheckedSocketFile file(socket);
  if (file.replaced()) throw UntrustedPeer(file.problem());
  if (!file.problem().empty()) throw std::runtime_error(file.problem());
  const int fd = connect_unix(file, timeout_ms);
  if (fd < 0) {
    const std::string why = errno == EAGAIN ? "the process accepted no connection within " +
                                                  std::to_string(timeout_ms) + " ms (stopped?)"
                                            : std::strerror(errno);
    throw std::runtime_error("cannot connect to " + socket_path + ": " + why);
  }
  const std::string untrusted = peer_problem(fd, socket);
  if (!untrusted.empty()) {
    ::close(fd);
    throw UntrustedPeer(untrusted);
  }
  auto ms_left = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::int64_t>(0, left.count()));
  };
  const std::string line = request + "\n";
  std::string answer;
  std::string failure;
  size_t sent = 0;
  while (failure.empty() && sent < line.size()) {
    const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      failure = std::string("cannot send the request: ") + std::strerror(errno);
    }
  }
  bool whole = false;  // the answer's newline came
  while (failure.empty() && !whole) {
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, ms_left());
    if (ready == 0) {
      failure = "no answer within " + std::to_string(timeout_ms / 1000) + " s";
      break;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      failure = std::string("poll failed: ") + std::strerror(errno);
      break;
    }
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      answer.append(buffer, static_cast<size_t>(n));
      whole = std::memchr(buffer, '\n', static_cast<size_t>(n)) != nullptr;
      if (!whole && answer.size() > kMaxAnswerBytes) {
        failure = "the answer is longer than " + std::to_string(kMaxAnswerBytes >> 20) + " MiB";
      }
    } else if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    } else {
      if (answer.empty()) failure = "the process closed the connection without an answer";
      break;
    }
  }
  ::close(fd);
  if (!failure.empty()) throw std::runtime_error(socket_path + ": " + failure);
  std::string problem;
  std::optional<nlohmann::json> parsed =
      parse_answer(answer.substr(0, answer.find('\n')), &problem);
  if (!parsed) throw std::runtime_error(socket_path + ": the answer " + problem);
  return std::move(*parsed);
}

const nlohmann::json& require_ok(const nlohmann::json& answer, pid_t pid) {
  const std::string failure = answer_failure(answer);
  if (!failure.empty()) throw std::runtime_error("pid " + std::to_string(pid) + ": " + failure);
  return answer;
}

}  // namespace vramshim::cli
