#include "analyzer/json_guard.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace vramshim::analyzer {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
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
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (S_ISREG(st.st_mode) && size > limits.max_file_bytes) {
    fail(path, "too large for a report (" + std::to_string(size) + " bytes, limit " +
                   std::to_string(limits.max_file_bytes) + ")");
  }
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, std::strerror(errno));
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(size);
  LimitChecker checker(path, limits);
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (n == 0) break;
    if (text.size() + n > limits.max_file_bytes) fail(path, "too large for a report");
    checker.feed(buffer, n);
    text.append(buffer, n);
  }
  if (std::ferror(file.get())) fail(path, "read error");
  if (text.empty()) fail(path, "empty file, not a vramshim report");
  return text;
}

}  // namespace vramshim::analyzer
