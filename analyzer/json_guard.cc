#include "analyzer/json_guard.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace vramshim::analyzer {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

}  // namespace

uint64_t check_json_limits(const std::string& path, const JsonLimits& limits) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (S_ISREG(st.st_mode)) {
    if (size == 0) fail(path, "empty file, not a vramshim report");
    if (size > limits.max_file_bytes) {
      fail(path, "too large for a report (" + std::to_string(size) + " bytes, limit " +
                     std::to_string(limits.max_file_bytes) + ")");
    }
  }
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, std::strerror(errno));

  std::vector<char> buffer(1 << 20);
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  uint64_t string_bytes = 0;
  uint64_t total = 0;
  for (;;) {
    const size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n == 0) break;
    total += n;
    if (total > limits.max_file_bytes) fail(path, "too large for a report");
    for (size_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (in_string) {
        if (++string_bytes > limits.max_string_bytes) {
          fail(path, "holds a string longer than " + std::to_string(limits.max_string_bytes) +
                         " bytes, not a vramshim report");
        }
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
        string_bytes = 0;
      } else if (c == '{' || c == '[') {
        if (++depth > limits.max_depth) {
          fail(path, "nested deeper than " + std::to_string(limits.max_depth) +
                         " levels, not a vramshim report");
        }
      } else if (c == '}' || c == ']') {
        --depth;
      }
    }
  }
  if (std::ferror(file.get())) fail(path, "read error");
  if (total == 0) fail(path, "empty file, not a vramshim report");
  return total;
}

}  // namespace vramshim::analyzer
