#include "analyzer/model/trace_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "analyzer/files/regular_file.h"
#include "analyzer/model/pickle_reader.h"
#include "analyzer/model/torch_snapshot.h"

namespace vramshim::analyzer {
namespace {

constexpr char kPickleProto = '\x80';

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

std::string read_whole_file(const std::string& path) {
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

}  // namespace

AllocationTrace read_allocation_trace(const std::string& path) {
  const std::string data = read_whole_file(path);
  if (data.empty()) fail(path, "empty");
  if (data[0] == '{') {
    fail(path,
         "a JSON file, such as a vramshim report, which records no event trace yet; "
         "replay reads PyTorch memory snapshots (torch.cuda.memory._dump_snapshot)");
  }
  if (data[0] != kPickleProto) {
    fail(path, "not a PyTorch memory snapshot (a pickle of protocol 2 or later)");
  }
  try {
    const PickleValue::Ref snapshot = read_pickle(data);
    return trace_from_torch_snapshot(*snapshot);
  } catch (const std::runtime_error& e) {
    fail(path, e.what());
  }
}

}  // namespace vramshim::analyzer
