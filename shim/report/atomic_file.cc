#include "shim/report/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace vramshim::report {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
constexpr int kCreateAttempts = 100;

std::atomic<unsigned> temporary_counter{0};

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), buffer_(kBufferBytes) {
  if (path_.empty() || path_.back() == '/') {
    error_ = "invalid report path '" + path_ + "'";
    return;
  }
  const std::string prefix =
      directory_of(path_) + "/." + name_of(path_) + ".tmp." + std::to_string(getpid()) + ".";
  int error_number = 0;
  for (int attempt = 0; attempt < kCreateAttempts && fd_ < 0; ++attempt) {
    temporary_path_ = prefix + std::to_string(temporary_counter.fetch_add(1));
    fd_ = ::open(temporary_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    error_number = errno;
    if (fd_ < 0 && error_number != EEXIST) break;
  }
  if (fd_ < 0) {
    fail("cannot create", temporary_path_, error_number);
    temporary_path_.clear();
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_path_.empty()) ::unlink(temporary_path_.c_str());
}

void AtomicFile::fail(const char* what, const std::string& path, int error_number) {
  if (!error_.empty()) return;
  char text[256];
  error_ = std::string(what) + " " + path + ": " + strerror_r(error_number, text, sizeof(text));
}

void AtomicFile::flush() {
  if (used_ > 0 && error_.empty() && !write_all(fd_, buffer_.data(), used_)) {
    fail("cannot write", temporary_path_, errno);
  }
  used_ = 0;
}

void AtomicFile::append(std::string_view bytes) {
  if (bytes.size() > buffer_.size() - used_) {
    flush();
    if (bytes.size() >= buffer_.size()) {
      if (error_.empty() && !write_all(fd_, bytes.data(), bytes.size())) {
        fail("cannot write", temporary_path_, errno);
      }
      return;
    }
  }
  std::memcpy(buffer_.data() + used_, bytes.data(), bytes.size());
  used_ += bytes.size();
}

const std::string& AtomicFile::commit() {
  if (!error_.empty()) return error_;
  flush();
  if (error_.empty() && ::fsync(fd_) != 0) fail("cannot sync", temporary_path_, errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (error_.empty() && closed != 0) fail("cannot close", temporary_path_, errno);
  if (!error_.empty()) return error_;
  if (::rename(temporary_path_.c_str(), path_.c_str()) != 0) {
    fail("cannot rename to", path_, errno);
    return error_;
  }
  committed_ = true;
  // Make the rename itself durable; a failure here leaves a complete file in place.
  const int directory = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
  }
  return error_;
}

}  // namespace vramshim::report
