#include "analyzer/files/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <streambuf>

#include "analyzer/files/removed_if_killed.h"

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

// The name of a temporary next to `path`: PATH.tmp.SUFFIX, with PATH's last component cut short
// where the whole would be longer than a file's name may be (a legal name of 235 bytes or more).
std::string temporary_name(const std::string& path, const char* suffix) {
  const std::string tail = std::string(".tmp.") + suffix;
  const size_t slash = path.rfind('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  const size_t name_length = std::min(path.size() - name_start, size_t{NAME_MAX} - tail.size());
  return path.substr(0, name_start + name_length) + tail;
}

// Creates a file of our own next to `path`, named PATH.tmp.<64 random bits>, with `mode` less the
// umask, that a signal ending the process removes while *removal lives. A name another user can
// guess could be taken first, by a link to a file they want us to overwrite; O_EXCL refuses any
// existing name (links not followed), and a taken name is just skipped.
int create_temporary(const std::string& path, mode_t mode, std::string* temporary,
                     std::optional<RemovedIfKilled>* removal) {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t bits = (uint64_t{random()} << 32) ^ random();
    char suffix[17];
    std::snprintf(suffix, sizeof(suffix), "%016" PRIx64, bits);
    *temporary = temporary_name(path, suffix);
    // Named before it exists, so that no signal falls between its creation and its naming. Only a
    // signal in the instant after an open that found the name taken would remove another's file:
    // one of 2^64 names nobody can predict.
    removal->emplace(*temporary);
    const int fd =
        ::open(temporary->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    const int error = errno;
    removal->reset();
    errno = error;
    if (error != EEXIST) return -1;
  }
  return -1;  // errno is EEXIST
}

// Gives the new file `fd` the permission bits of the file it replaces, `old`, so that nobody who
// could not read the old file can read the new one, and, when we are root and the old file's owner
// also owns the directory `path` is in, its owner and group: root rewriting a user's file in their
// own directory leaves it theirs. In a directory of someone else's (a sticky /tmp) a file planted
// by another user must not make them the owner of root's output, nor its bits widen who may read
// or write it: they are capped by those of a new file (the umask's). Set-user-ID and the like are
// not carried over: an output is data. 0, or the errno of what failed.
int keep_owner_and_mode(int fd, const std::string& path, const struct stat& old) {
  bool given_to_owner = false;
  if (::geteuid() == 0 && old.st_uid != 0) {
    const size_t slash = path.rfind('/');
    const std::string directory = slash == std::string::npos ? "."
                                  : slash == 0               ? "/"
                                                             : path.substr(0, slash);
    struct stat directory_status;
    if (::stat(directory.c_str(), &directory_status) == 0 &&
        directory_status.st_uid == old.st_uid) {
      if (::fchown(fd, old.st_uid, old.st_gid) != 0) return errno;
      given_to_owner = true;
    }
  }
  mode_t mode = old.st_mode & 0777;
  if (!given_to_owner && old.st_uid != ::geteuid()) {
    struct stat created;  // made with a new file's mode, less the umask
    if (::fstat(fd, &created) != 0) return errno;
    mode &= created.st_mode & 0777;
  }
  return ::fchmod(fd, mode) == 0 ? 0 : errno;
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

// The descriptor of this process that `path` names (/dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N), or -1. Written as it is, whatever it is (a file cron redirected to, a pipe of
// the user who ran sudo): a rename over the link in /dev would replace the machine's /dev/stdout.
int own_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const size_t length = std::strlen(prefix);
    if (path.compare(0, length, prefix) != 0 || path.size() == length || path.size() > length + 9) {
      continue;
    }
    int fd = 0;
    for (size_t i = length; i < path.size(); ++i) {
      if (path[i] < '0' || path[i] > '9') return -1;
      fd = fd * 10 + (path[i] - '0');
    }
    return fd;
  }
  return -1;
}

// Has `write` write into `fd` (not closed here); the first error's errno, or 0.
int write_into(int fd, const std::function<void(std::ostream&)>& write) {
  DescriptorBuffer buffer(fd);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  if (buffer.error() != 0) return buffer.error();
  return out ? 0 : EIO;
}

// Writes into the terminal, device or pipe at `path` (lstat'ed as `seen`, not a link) as it is: no
// temporary, no rename, no fsync. What is opened must be what was looked at: O_NOFOLLOW, and the
// same device and inode, so that another user cannot swap a link or another node in between.
void write_through(const std::string& path, const struct stat& seen,
                   const std::function<void(std::ostream&)>& write) {
  if (!ours_or_roots(seen)) {
    throw std::runtime_error(path + ": refused: a terminal, device or pipe of another user's");
  }
  // O_NONBLOCK: a pipe nobody reads fails at once (ENXIO) instead of waiting for a reader.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) fail(path, errno);
  struct stat opened;
  int error = 0;
  if (::fstat(fd, &opened) != 0) {
    error = errno;
  } else if (opened.st_dev != seen.st_dev || opened.st_ino != seen.st_ino) {
    ::close(fd);
    throw std::runtime_error(path + ": refused: it changed while it was being opened");
  } else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    error = errno;
  }
  if (error == 0) {
    try {
      error = write_into(fd, write);
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail(path, error);
}

const char* kind_of(const struct stat& info) {
  if (S_ISDIR(info.st_mode)) return "a directory";
  if (S_ISSOCK(info.st_mode)) return "a socket";
  if (S_ISCHR(info.st_mode)) return "a character device";
  if (S_ISFIFO(info.st_mode)) return "a pipe";
  return "a block device";
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
  if (const int own = own_descriptor(path); own >= 0) {
    if (::fcntl(own, F_GETFD) < 0) fail(path, EBADF);
    if (const int error = write_into(own, write)) fail(path, error);
    return;
  }
  struct stat existing;
  const bool found = ::lstat(path.c_str(), &existing) == 0;
  if (found) {
    struct stat target;
    if (S_ISLNK(existing.st_mode)) {
      // A link is replaced, never written through; one to anything but a file is refused, as
      // replacing it would break what it stands for (a link in /dev, say).
      if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) {
        throw std::runtime_error(path + ": refused: a link to " + kind_of(target) +
                                 " (name it itself)");
      }
    } else if (is_stream(existing)) {
      return write_through(path, existing, write);
    } else if (!S_ISREG(existing.st_mode)) {
      throw std::runtime_error(path + ": refused: not a regular file (" + kind_of(existing) + ")");
    }
  }
  // A file replaced keeps its permissions (and its owner, see keep_owner_and_mode), given before
  // anything is written into a new file created private: the data is never readable by more users
  // than it was. A new file gets
  // 0666 less the umask, as any program's.
  const bool replacing = found && S_ISREG(existing.st_mode);
  std::string temporary;
  std::optional<RemovedIfKilled> removal;
  const int fd = create_temporary(path, replacing ? 0600 : 0666, &temporary, &removal);
  if (fd < 0) fail(path, errno);
  int error = replacing ? keep_owner_and_mode(fd, path, existing) : 0;
  try {
    if (error == 0) error = write_into(fd, write);
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
