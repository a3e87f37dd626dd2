#include "shim/report/checked_directory.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>
#include <vector>

namespace vramshim::report {
namespace {

// Links followed in one resolution, as the kernel's own limit (ELOOP beyond).
constexpr int kMaxLinks = 40;

// Whether a link, found in the directory of status `holder`, may be followed. Root follows only
// links of root's: another user's link would send root's write where that user wants (/etc). Other
// users follow their own and root's, and any other link in a directory nobody else may write
// into (a team's link in its owner's directory); one in a shared directory (/tmp, a group-writable
// project) may have been planted.
bool may_follow(const struct stat& link, const struct stat& holder) {
  const uid_t self = ::geteuid();
  if (link.st_uid == 0 || link.st_uid == self) return true;
  if (self == 0) return false;
  return (holder.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// Pushes the components of `path` onto `pending` so that the first one is at the back.
void push_components(std::string_view path, std::vector<std::string>* pending) {
  size_t end = path.size();
  while (end > 0) {
    const size_t slash = path.rfind('/', end - 1);
    const size_t start = slash == std::string_view::npos ? 0 : slash + 1;
    if (start < end) pending->emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    end = slash;
  }
}

int open_root_or_here(bool absolute) {
  return ::open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

std::string system_error(const std::string& what, int error_number) {
  char text[256];
  return what + ": " + strerror_r(error_number, text, sizeof(text));
}

std::string refusal(const std::string& directory, const std::string& link, uid_t owner) {
  return directory + ": refused: the symbolic link '" + link + "' of uid " + std::to_string(owner) +
         " (another user's link is followed only " +
         (::geteuid() == 0 ? "by no root job)" : "from a directory nobody else may write to)");
}

}  // namespace

int open_checked_directory(const std::string& directory, std::string* error) {
  std::vector<std::string> pending;  // components still to walk, the next one at the back
  push_components(directory, &pending);
  int fd = open_root_or_here(!directory.empty() && directory[0] == '/');
  if (fd < 0) {
    *error = system_error("cannot create a file in " + directory, errno);
    return -1;
  }
  int links = 0;
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    const int next = ::openat(fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    struct stat info;
    if (next < 0 || ::fstat(next, &info) != 0) {
      *error = system_error("cannot create a file in " + directory, errno);
      if (next >= 0) ::close(next);
      ::close(fd);
      return -1;
    }
    if (S_ISDIR(info.st_mode)) {
      ::close(fd);
      fd = next;
      continue;
    }
    char target[PATH_MAX];
    ssize_t length = -1;
    struct stat holder;
    if (!S_ISLNK(info.st_mode)) {
      *error = system_error("cannot create a file in " + directory, ENOTDIR);
    } else if (::fstat(fd, &holder) != 0) {
      *error = system_error("cannot inspect a directory on the way to " + directory, errno);
    } else if (!may_follow(info, holder)) {
      *error = refusal(directory, name, info.st_uid);
    } else if (++links > kMaxLinks) {
      *error = system_error("cannot create a file in " + directory, ELOOP);
    } else {
      length = ::readlinkat(next, "", target, sizeof(target));
      if (length <= 0 || length == sizeof(target)) {
        *error = system_error("cannot read a link in " + directory, length < 0 ? errno : EINVAL);
        length = -1;
      }
    }
    ::close(next);
    if (length < 0) {
      ::close(fd);
      return -1;
    }
    const std::string_view link(target, static_cast<size_t>(length));
    push_components(link, &pending);
    if (link[0] == '/') {
      ::close(fd);
      fd = open_root_or_here(true);
      if (fd < 0) {
        *error = system_error("cannot create a file in /", errno);
        return -1;
      }
    }
  }
  return fd;
}

}  // namespace vramshim::report
