// A program talking to its own shim over the control socket (VRAMSHIM_SOCKET must name the path).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

// Sends one request line and returns the one-line JSON answer ("" when the socket is unreachable).
inline std::string control_request(const std::string& request) {
  const char* path = std::getenv("VRAMSHIM_SOCKET");
  if (path == nullptr) return "";
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof(address.sun_path) - 1);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const std::string line = request + "\n";
    if (write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof buffer)) > 0)
        answer.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  return answer;
}

// The unsigned number after "KEY": in a JSON answer, or -1.
inline long long json_number(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtoll(json.c_str() + at + key.size() + 3, nullptr, 10);
}
