#include "analyzer/model/snapshot_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "analyzer/files/regular_file.h"
#include "analyzer/model/pickle_reader.h"

namespace vramshim::analyzer {
namespace {

constexpr char kPickleProto = '\x80';

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

}  // namespace

std::string read_snapshot_file(const std::string& path) {
  struct stat info;
  std::string why;
  const int fd = open_regular_file(path, &info, &why);
  if (fd < 0) fail(path, why);
  if (static_cast<uint64_t>(info.st_size) > kMaxTraceFileBytes) {
    ::close(fd);
    fail(path, "larger than " + std::to_string(kMaxTraceFileBytes) + " bytes");
  }
  std::string data;
  data.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail(path, std::strerror(error));
    }
    if (n == 0) break;
    // Checked while reading, as the file may grow after its size was looked at.
    if (data.size() + static_cast<size_t>(n) > kMaxTraceFileBytes) {
      ::close(fd);
      fail(path, "larger than " + std::to_string(kMaxTraceFileBytes) + " bytes");
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

PickleValue::Ref parse_snapshot_pickle(const std::string& path, const std::string& data) {
  if (data[0] != kPickleProto) {
    fail(path, "not a PyTorch memory snapshot (a pickle of protocol 2 or later)");
  }
  try {
    return read_pickle(data);
  } catch (const std::runtime_error& e) {
    fail(path, e.what());
  }
}

PickleValue::Ref read_snapshot_pickle(const std::string& path) {
  const std::string data = read_snapshot_file(path);
  if (data.empty()) fail(path, "empty");
  if (data[0] == '{') {
    fail(path, "a JSON file (a vramshim report?), not a PyTorch memory snapshot (a pickle)");
  }
  return parse_snapshot_pickle(path, data);
}

}  // namespace vramshim::analyzer
