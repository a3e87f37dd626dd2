#include "analyzer/model/json_guard.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "analyzer/files/regular_file.h"

namespace vramshim::analyzer {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

// Closes a descriptor when it goes out of scope.
struct ClosedAtExit {
  int fd;
  ~ClosedAtExit() { ::close(fd); }
};

// Tracks nesting and string lengths across the chunks of a file.
class LimitChecker {
 public:
  LimitChecker(const std::string& path, const JsonLimits& limits) : path_(path), limits_(limits) {}

  void feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const char c = data[i];
      if (in_string_) {
        if (++string_bytes_ > limits_.max_string_bytes) {
          fail(path_, "holds a string longer than " + std::to_string(limits_.max_string_bytes) +
                          " bytes, not a vramshim report");
        }
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = true;
        string_bytes_ = 0;
      } else if (c == '{' || c == '[') {
        if (++depth_ > limits_.max_depth) {
          fail(path_, "nested deeper than " + std::to_string(limits_.max_depth) +
                          " levels, not a vramshim report");
        }
      } else if (c == '}' || c == ']') {
        --depth_;
      }
    }
  }

 private:
  const std::string& path_;
  const JsonLimits& limits_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  uint64_t string_bytes_ = 0;
};

}  // namespace

std::string read_checked_json(const std::string& path, const JsonLimits& limits) {
  struct stat info;
  std::string why;
  const int fd = open_regular_file(path, &info, &why);
  if (fd < 0) fail(path, why);
  const ClosedAtExit closed{fd};
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > limits.max_file_bytes) {
    fail(path, "too large for a report (" + std::to_string(size) + " bytes, limit " +
                   std::to_string(limits.max_file_bytes) + ")");
  }
  std::string text;
  text.reserve(size);
  LimitChecker checker(path, limits);
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, std::string("read error: ") + std::strerror(errno));
    }
    // The file may grow while it is read: stop at the limit all the same.
    if (text.size() + static_cast<size_t>(n) > limits.max_file_bytes) {
      fail(path, "too large for a report (it grew past the limit of " +
                     std::to_string(limits.max_file_bytes) + " bytes while being read)");
    }
    checker.feed(buffer, static_cast<size_t>(n));
    text.append(buffer, static_cast<size_t>(n));
  }
  if (text.empty()) fail(path, "empty file, not a vramshim report");
  return text;
}

}  // namespace vramshim::analyzer
