#include "analyzer/commands/report_location.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace vramshim::cli {

std::vector<ReportNotice> read_report_notices(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // end of the pipe, or nothing more written yet
    }
  }
  std::vector<ReportNotice> notices;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find(' ');
    const size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second == std::string::npos || second + 1 >= line.size()) continue;
    char* end = nullptr;
    const long pid = std::strtol(line.c_str(), &end, 10);
    if (end != line.c_str() + first || pid <= 0) continue;
    notices.push_back({static_cast<pid_t>(pid), line.substr(first + 1, second - first - 1),
                       line.substr(second + 1)});
  }
  return notices;
}

std::string expand_for_pid(const std::string& pattern, pid_t pid) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string expanded;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      expanded += pattern[i];
      continue;
    }
    const char code = pattern[++i];
    if (code == 'p') {
      expanded += std::to_string(pid);
    } else if (code == 'h') {
      expanded += host;
    } else {
      expanded += '%';
      expanded += code;
    }
  }
  return expanded;
}

std::string report_directory(const std::string& pattern) {
  const size_t slash = pattern.rfind('/');
  if (slash == std::string::npos) return ".";
  const std::string directory = slash == 0 ? "/" : pattern.substr(0, slash);
  if (directory.find("%p") != std::string::npos) return "";
  const std::string expanded = expand_for_pid(directory, 0);
  return expanded.find('%') == std::string::npos ? expanded : "";
}

}  // namespace vramshim::cli
