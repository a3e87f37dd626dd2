#include "analyzer/control/control_client.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "shim/control/socket_path.h"

namespace vramshim::cli {
namespace {

// A connected client socket, or -1 with errno set.
int connect_unix(const std::string& path) {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

std::optional<pid_t> pid_from_socket_name(const std::string& name) {
  static constexpr char kSuffix[] = ".sock";
  const size_t suffix_length = sizeof(kSuffix) - 1;
  if (name.size() <= suffix_length ||
      name.compare(name.size() - suffix_length, suffix_length, kSuffix)) {
    return std::nullopt;
  }
  const std::string digits = name.substr(0, name.size() - suffix_length);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return std::nullopt;
  return static_cast<pid_t>(std::stol(digits));
}

}  // namespace

std::vector<std::string> socket_directories(const std::string& only) {
  if (!only.empty()) return {only};
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  return control::socket_directories(runtime_dir != nullptr ? runtime_dir : "", ::geteuid());
}

std::vector<SocketEntry> list_sockets(const std::vector<std::string>& directories) {
  std::vector<SocketEntry> entries;
  for (const std::string& directory : directories) {
    DIR* listing = ::opendir(directory.c_str());
    if (listing == nullptr) continue;
    while (const dirent* entry = ::readdir(listing)) {
      if (const std::optional<pid_t> pid = pid_from_socket_name(entry->d_name)) {
        entries.push_back({*pid, directory + "/" + entry->d_name});
      }
    }
    ::closedir(listing);
  }
  std::sort(entries.begin(), entries.end(),
            [](const SocketEntry& a, const SocketEntry& b) { return a.pid < b.pid; });
  return entries;
}

std::string socket_for_pid(pid_t pid) {
  for (const std::string& directory : socket_directories()) {
    const std::string path = directory + "/" + std::to_string(pid) + ".sock";
    if (::access(path.c_str(), F_OK) == 0) return path;
  }
  throw std::runtime_error("no vramshim socket for pid " + std::to_string(pid) +
                           " (is it running under vramshim?)");
}

nlohmann::json ask(const std::string& socket_path, const std::string& request, int timeout_ms) {
  const int fd = connect_unix(socket_path);
  if (fd < 0) {
    throw std::runtime_error("cannot connect to " + socket_path + ": " + std::strerror(errno));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
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
  while (failure.empty() && answer.find('\n') == std::string::npos) {
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
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (answer.empty()) failure = "the process closed the connection without an answer";
      break;
    }
  }
  ::close(fd);
  if (!failure.empty()) throw std::runtime_error(socket_path + ": " + failure);
  nlohmann::json parsed =
      nlohmann::json::parse(answer.substr(0, answer.find('\n')), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw std::runtime_error(socket_path + ": the answer is not a JSON object");
  }
  return parsed;
}

const nlohmann::json& require_ok(const nlohmann::json& answer, pid_t pid) {
  if (answer.value("ok", false) != true) {
    throw std::runtime_error("pid " + std::to_string(pid) + ": " +
                             answer.value("error", std::string("request failed")));
  }
  return answer;
}

bool socket_is_stale(const SocketEntry& entry) {
  if (::kill(entry.pid, 0) != 0 && errno == ESRCH) return true;
  const int fd = connect_unix(entry.path);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == ECONNREFUSED || errno == ENOENT;
}

}  // namespace vramshim::cli
