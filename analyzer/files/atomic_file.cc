#include "analyzer/files/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <streambuf>

namespace vramshim::analyzer {
namespace {

// A stream buffer writing to a descriptor; remembers the first error.
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof(buffer_)); }

  // 0, or the errno of the first write that failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* next = pbase();
    while (error_ == 0 && next < pptr()) {
      const ssize_t n = ::write(fd_, next, static_cast<size_t>(pptr() - next));
      if (n > 0) {
        next += n;
      } else if (n == 0 || errno != EINTR) {
        error_ = n == 0 ? EIO : errno;
      }
    }
    setp(buffer_, buffer_ + sizeof(buffer_));
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

// Creates a file of our own next to `path`, named PATH.tmp.<64 random bits>. A name another user
// can guess could be taken first, by a link to a file they want us to overwrite; O_EXCL refuses
// any existing name (links not followed), and a taken name is just skipped.
int create_temporary(const std::string& path, std::string* temporary) {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t bits = (uint64_t{random()} << 32) ^ random();
    char suffix[17];
    std::snprintf(suffix, sizeof(suffix), "%016" PRIx64, bits);
    *temporary = path + ".tmp." + suffix;
    const int fd =
        ::open(temporary->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;  // errno is EEXIST
}

[[noreturn]] void fail(const std::string& path, int error) {
  throw std::runtime_error(path + ": cannot write: " + std::strerror(error));
}

bool ours_or_roots(const struct stat& info) {
  return info.st_uid == 0 || info.st_uid == ::geteuid();
}

// A terminal, /dev/null, a pipe: what a user names to see or discard the output, which a rename
// over the name would destroy (as root, /dev/null replaced by a regular file breaks the machine).
bool is_stream(const struct stat& info) { return S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode); }

// Whether the link at `path` (lstat'ed as `link`) was put there by us or root, in a directory no
// other user may change (or a sticky one): /dev/stdout, not another user's link in a shared
// directory, which could be pointed anywhere between a check and an open.
bool trusted_link(const std::string& path, const struct stat& link) {
  if (!ours_or_roots(link)) return false;
  const size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "."
                                : slash == 0               ? "/"
                                                           : path.substr(0, slash);
  struct stat parent;
  if (::stat(directory.c_str(), &parent) != 0 || !ours_or_roots(parent)) return false;
  return (parent.st_mode & S_ISVTX) != 0 || (parent.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// Writes into the stream at `path` as it is (no temporary, no rename, no fsync). Owned by us or
// root, checked on what was opened: a pipe another user made could hold the CLI in open() or
// read what it writes.
void write_through(const std::string& path, const std::function<void(std::ostream&)>& write) {
  // O_NONBLOCK: a pipe nobody reads fails at once (ENXIO) instead of waiting for a reader.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, errno);
  struct stat opened;
  int error = 0;
  if (::fstat(fd, &opened) != 0) {
    error = errno;
  } else if (!is_stream(opened) || !ours_or_roots(opened)) {
    ::close(fd);
    throw std::runtime_error(path + ": refused: not a terminal, device or pipe of root's or ours");
  } else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    error = errno;
  }
  if (error == 0) {
    try {
      DescriptorBuffer buffer(fd);
      std::ostream out(&buffer);
      write(out);
      out.flush();
      error = buffer.error();
      if (error == 0 && !out) error = EIO;
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail(path, error);
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
  struct stat existing;
  if (::lstat(path.c_str(), &existing) == 0) {
    struct stat target;
    if (S_ISLNK(existing.st_mode)) {
      if (trusted_link(path, existing) && ::stat(path.c_str(), &target) == 0 && is_stream(target)) {
        return write_through(path, write);
      }
    } else if (is_stream(existing)) {
      return write_through(path, write);
    } else if (!S_ISREG(existing.st_mode)) {
      throw std::runtime_error(path + ": refused: not a regular file (" +
                               (S_ISDIR(existing.st_mode)    ? "a directory"
                                : S_ISSOCK(existing.st_mode) ? "a socket"
                                                             : "a block device") +
                               ")");
    }
  }
  std::string temporary;
  const int fd = create_temporary(path, &temporary);
  if (fd < 0) fail(path, errno);
  int error = 0;
  try {
    DescriptorBuffer buffer(fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    error = buffer.error();
    if (error == 0 && !out) error = EIO;
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  // fsync first: after a crash the new name must not stand for an empty or partial file.
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    fail(path, error);
  }
}

}  // namespace vramshim::analyzer
