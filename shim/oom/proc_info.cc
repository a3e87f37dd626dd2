#include "shim/oom/proc_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace vramshim::oom {
namespace {

constexpr char kCut[] = "...";
// /proc/self/status is about 1.5 KiB; NSpid is in its first half.
constexpr size_t kMaxStatusBytes = 16 * 1024;

// Up to `limit` bytes of a /proc file, or empty.
std::string read_proc_file(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string bytes(limit, '\0');
  size_t length = 0;
  while (length < limit) {
    const ssize_t n = ::read(fd, &bytes[length], limit - length);
    if (n > 0) {
      length += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fd);
  bytes.resize(length);
  return bytes;
}

}  // namespace

std::string process_command(pid_t pid) {
  const std::string directory = "/proc/" + std::to_string(pid) + "/";
  // One byte more than is kept tells whether the command was cut.
  std::string command = read_proc_file(directory + "cmdline", kMaxCommandBytes + 1);
  while (!command.empty() && command.back() == '\0') command.pop_back();
  if (command.empty()) {
    std::string name = read_proc_file(directory + "comm", kMaxCommandBytes);
    while (!name.empty() && name.back() == '\n') name.pop_back();
    return name.empty() ? name : "[" + name + "]";
  }
  for (char& c : command) {
    if (c == '\0') c = ' ';
  }
  if (command.size() > kMaxCommandBytes) {
    command.resize(kMaxCommandBytes - (sizeof(kCut) - 1));
    command += kCut;
  }
  return command;
}

pid_t pid_known_to_driver() {
  const std::string status = read_proc_file("/proc/self/status", kMaxStatusBytes);
  const size_t line = status.find("\nNSpid:");
  if (line == std::string::npos) return ::getpid();
  // The first of the line's pids is the outermost namespace's.
  const char* first = status.c_str() + line + 7;
  char* end = nullptr;
  const long pid = std::strtol(first, &end, 10);
  return end != first && pid > 0 ? static_cast<pid_t>(pid) : ::getpid();
}

}  // namespace vramshim::oom
