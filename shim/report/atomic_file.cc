#include "shim/report/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "shim/report/checked_directory.h"

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

// Removes the temporaries of writers that no longer run, owned by this user, in the directory
// `directory_fd`: only those written where pids mean what they mean here (a writer in another
// container or on another node of a shared file system runs with a pid that says nothing about
// this one's processes).
void remove_leftovers(int directory_fd, const std::string& here) {
  const int listing_fd = ::openat(directory_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing_fd < 0) return;
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return;
  }
  const uid_t self = ::geteuid();
  while (const dirent* entry = ::readdir(listing)) {
    const pid_t writer = writer_of(entry->d_name, here);
    if (writer == 0 || writer == ::getpid()) continue;
    if (::kill(writer, 0) == 0 || errno != ESRCH) continue;  // running, or not ours to ask
    struct stat info;
    if (::fstatat(listing_fd, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(info.st_mode) || info.st_uid != self) continue;
    ::unlinkat(listing_fd, entry->d_name, 0);
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

// 0644 less this process's umask, read from /proc: umask(2) cannot read it without setting it, a
// race with other threads' creations. Without /proc, 0600.
mode_t everyone_mode() {
  const std::string status = first_bytes("/proc/self/status", 4096);
  static constexpr char kUmask[] = "\nUmask:\t";
  const size_t at = status.find(kUmask);
  if (at == std::string::npos) return 0600;
  char* end = nullptr;
  const long umask = std::strtol(status.c_str() + at + sizeof(kUmask) - 1, &end, 8);
  if (*end != '\n' || umask < 0) return 0600;
  return 0644 & ~static_cast<mode_t>(umask);
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

AtomicFile::AtomicFile(std::string path, NewFileReaders readers)
    : path_(std::move(path)), name_(name_of(path_)), buffer_(kBufferBytes) {
  if (path_.empty() || path_.back() == '/') {
    error_ = "invalid report path '" + path_ + "'";
    return;
  }
  directory_fd_ = open_checked_directory(directory_of(path_), &error_);
  if (directory_fd_ < 0) return;
  // What is at the path is replaced whole: only a regular file may be. A link (/dev/stdout, as
  // root in a container) would be replaced by the report rather than written through.
  struct stat existing;
  const bool replacing =
      ::fstatat(directory_fd_, name_.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0;
  if (replacing && !S_ISREG(existing.st_mode)) {
    error_ = path_ +
             (S_ISLNK(existing.st_mode) ? " is a symbolic link" : " is not a regular file") +
             ": a report replaces only a regular file";
    return;
  }
  // Where pids mean what they mean here; unknown (no /proc), no leftover can be told apart.
  const std::string here = pid_namespace_tag();
  if (!here.empty()) remove_leftovers(directory_fd_, here);
  create_temporary(here);
  if (fd_ >= 0) set_mode(readers, replacing ? &existing : nullptr);
}

// Creates `.<name>.vramshim-tmp.<pid>@<where>.<random>` (0600), the name cut to fit NAME_MAX.
void AtomicFile::create_temporary(const std::string& here) {
  const std::string writer =
      kMarker + std::to_string(getpid()) + "@" + (here.empty() ? "unknown" : here) + ".";
  const size_t room = NAME_MAX - 1 - writer.size() - 16;  // '.', <random>
  const std::string prefix = "." + name_.substr(0, room) + writer;
  const std::string directory = directory_of(path_);
  int error_number = 0;
  for (int attempt = 0; attempt < kCreateAttempts && fd_ < 0; ++attempt) {
    temporary_name_ = prefix + random_suffix();
    temporary_path_ = directory + "/" + temporary_name_;
    fd_ = ::openat(directory_fd_, temporary_name_.c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    error_number = errno;
    if (fd_ < 0 && error_number != EEXIST) break;
  }
  if (fd_ < 0) {
    fail("cannot create", temporary_path_, error_number);
    temporary_name_.clear();
  }
}

// The mode of a new file, or the permission bits of the one replaced, before a byte is written.
// Set-user-ID and the like are never kept. The directory is root's or this user's
// (open_checked_directory), so a file of another user's there was planted (a sticky /tmp): it
// neither widens who may read (its bits are capped by those of a new file) nor, unlike the CLI's
// rule for a user's file in their own directory, gives the report to its owner.
void AtomicFile::set_mode(NewFileReaders readers, const struct stat* replaced) {
  const mode_t new_mode = readers == NewFileReaders::kOwnerOnly ? 0600 : everyone_mode();
  mode_t mode = new_mode;
  if (replaced != nullptr) {
    mode = replaced->st_mode & 0777;
    if (readers == NewFileReaders::kOwnerOnly || replaced->st_uid != ::geteuid()) mode &= new_mode;
  }
  if (::fchmod(fd_, mode) != 0) fail("cannot set the mode of", temporary_path_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_name_.empty()) {
    ::unlinkat(directory_fd_, temporary_name_.c_str(), 0);
  }
  if (directory_fd_ >= 0) ::close(directory_fd_);
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
  if (::renameat(directory_fd_, temporary_name_.c_str(), directory_fd_, name_.c_str()) != 0) {
    fail("cannot rename to", path_, errno);
    return error_;
  }
  committed_ = true;
  // Make the rename itself durable; a failure here leaves a complete file in place.
  const int directory = ::openat(directory_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
  }
  return error_;
}

}  // namespace vramshim::report
