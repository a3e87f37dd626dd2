#include "shim/report/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace vramshim::report {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
constexpr int kCreateAttempts = 100;
constexpr char kMarker[] = ".vramshim-tmp.";

std::atomic<uint64_t> temporary_counter{0};

// 64 unpredictable bits, as 16 hex digits.
std::string random_suffix() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bits))) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    bits = (static_cast<uint64_t>(now.tv_nsec) << 20) ^ static_cast<uint64_t>(now.tv_sec) ^
           (temporary_counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL);
  }
  char text[17];
  for (int i = 15; i >= 0; --i, bits >>= 4) text[i] = "0123456789abcdef"[bits & 0xf];
  text[16] = '\0';
  return text;
}

// Up to `size` bytes of the file at `path` (the first line of a /proc file), or "".
std::string first_bytes(const char* path, size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text(size, '\0');
  const ssize_t n = ::read(fd, text.data(), size);
  ::close(fd);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

// The writer pid of a temporary name `.<name>.vramshim-tmp.<pid>@<where>.<hex>` whose <where> is
// `here`, or 0 if the name is not one.
pid_t writer_of(const char* name, const std::string& here) {
  if (name[0] != '.') return 0;
  const char* marker = std::strstr(name, kMarker);
  if (marker == nullptr) return 0;
  const char* digits = marker + sizeof(kMarker) - 1;
  char* end = nullptr;
  const long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '@' || pid <= 0 || pid > (1L << 22)) return 0;
  if (std::strncmp(end + 1, here.c_str(), here.size()) != 0 || end[1 + here.size()] != '.') {
    return 0;
  }
  return static_cast<pid_t>(pid);
}

// Removes the temporaries of writers that no longer run, owned by this user, in `directory`: only
// those written where pids mean what they mean here (a writer in another container or on another
// node of a shared file system runs with a pid that says nothing about this one's processes).
void remove_leftovers(const std::string& directory, const std::string& here) {
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return;
  DIR* listing = ::fdopendir(dir_fd);
  if (listing == nullptr) {
    ::close(dir_fd);
    return;
  }
  const uid_t self = ::geteuid();
  while (const dirent* entry = ::readdir(listing)) {
    const pid_t writer = writer_of(entry->d_name, here);
    if (writer == 0 || writer == ::getpid()) continue;
    if (::kill(writer, 0) == 0 || errno != ESRCH) continue;  // running, or not ours to ask
    struct stat info;
    if (::fstatat(dir_fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(info.st_mode) || info.st_uid != self) continue;
    ::unlinkat(dir_fd, entry->d_name, 0);
  }
  ::closedir(listing);
}

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

std::atomic<uint64_t> g_bytes_written{0};

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    g_bytes_written.fetch_add(static_cast<uint64_t>(written), std::memory_order_relaxed);
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

}  // namespace

uint64_t bytes_written_by_reports() { return g_bytes_written.load(std::memory_order_relaxed); }

std::string pid_namespace_tag() {
  // The boot (one per host and boot) and the pid namespace (one per container), hashed (FNV-1a).
  const std::string boot = first_bytes("/proc/sys/kernel/random/boot_id", 64);
  char link[64] = {};
  const ssize_t length = ::readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  if (boot.empty() && length <= 0) return {};
  const std::string where = boot + "|" + std::string(link, length > 0 ? length : 0);
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : where) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  char text[17];
  for (int i = 15; i >= 0; --i, hash >>= 4) text[i] = "0123456789abcdef"[hash & 0xf];
  text[16] = '\0';
  return text;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), buffer_(kBufferBytes) {
  if (path_.empty() || path_.back() == '/') {
    error_ = "invalid report path '" + path_ + "'";
    return;
  }
  // What is at the path is replaced whole: only a regular file may be. A link (/dev/stdout, as
  // root in a container) would be replaced by the report rather than written through.
  struct stat existing;
  if (::lstat(path_.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    error_ = path_ +
             (S_ISLNK(existing.st_mode) ? " is a symbolic link" : " is not a regular file") +
             ": a report replaces only a regular file";
    return;
  }
  const std::string directory = directory_of(path_);
  // Where pids mean what they mean here; unknown (no /proc), no leftover can be told apart.
  const std::string here = pid_namespace_tag();
  if (!here.empty()) remove_leftovers(directory, here);
  const std::string prefix = directory + "/." + name_of(path_) + kMarker +
                             std::to_string(getpid()) + "@" + (here.empty() ? "unknown" : here) +
                             ".";
  int error_number = 0;
  for (int attempt = 0; attempt < kCreateAttempts && fd_ < 0; ++attempt) {
    temporary_path_ = prefix + random_suffix();
    fd_ =
        ::open(temporary_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
