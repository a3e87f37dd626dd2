#include "analyzer/control/socket_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "shim/control/socket_path.h"

namespace vramshim::cli {
namespace {

// The pid a socket name stands for: the shim names its socket std::to_string(getpid()) + ".sock".
std::optional<pid_t> pid_from_socket_name(const std::string& name) {
  static constexpr char kSuffix[] = ".sock";
  const size_t suffix_length = sizeof(kSuffix) - 1;
  if (name.size() <= suffix_length ||
      name.compare(name.size() - suffix_length, suffix_length, kSuffix)) {
    return std::nullopt;
  }
  const std::string digits = name.substr(0, name.size() - suffix_length);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit))
    return std::nullopt;
  return static_cast<pid_t>(std::stol(digits));
}

// Why an entry with status `info` (not following a link) is not a socket of `owner` we may trust;
// empty if it is one. The shim creates its socket owned by its own uid.
std::string socket_problem(const std::string& path, const struct stat& info, uid_t owner) {
  if (!S_ISSOCK(info.st_mode)) return path + " is not a socket";
  if (info.st_uid != owner) {
    return path + " is owned by uid " + std::to_string(info.st_uid) + ", not " +
           std::to_string(owner);
  }
  return {};
}

}  // namespace

SocketDirectory::SocketDirectory(std::string path, uid_t owner)
    : path_(std::move(path)), owner_(owner) {
  // O_PATH | O_NOFOLLOW opens what is at the name itself, a link included, without reading it:
  // the directory is checked first, and what is listed and removed later is what was checked.
  const int handle = ::open(path_.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (handle < 0) {
    missing_ = errno == ENOENT;
    if (!missing_) problem_ = "cannot open " + path_ + ": " + std::strerror(errno);
    return;
  }
  struct stat info;
  if (::fstat(handle, &info) != 0) {
    problem_ = "cannot inspect " + path_ + ": " + std::strerror(errno);
  } else if (S_ISLNK(info.st_mode)) {
    problem_ = path_ + " is a symbolic link";
  } else {
    problem_ = control::verify_private_directory(path_, info, owner_);
  }
  if (problem_.empty()) {
    fd_ = ::openat(handle, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) problem_ = "cannot open " + path_ + ": " + std::strerror(errno);
  }
  ::close(handle);
}

SocketDirectory::~SocketDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<SocketEntry> SocketDirectory::sockets(std::vector<std::string>* refused,
                                                  size_t max_listed, bool* cut) const {
  std::vector<SocketEntry> entries;
  if (fd_ < 0) return entries;
  // A descriptor of its own for the listing (fdopendir takes it over), read from the start.
  const int listing_fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* listing = listing_fd >= 0 ? ::fdopendir(listing_fd) : nullptr;
  if (listing == nullptr) {
    refused->push_back("cannot list " + path_ + ": " + std::strerror(errno));
    if (listing_fd >= 0) ::close(listing_fd);
    return entries;
  }
  size_t listed = 0;
  while (const dirent* entry = ::readdir(listing)) {
    const std::optional<pid_t> pid = pid_from_socket_name(entry->d_name);
    if (!pid) continue;
    if (listed++ == max_listed) {
      refused->push_back(path_ + " holds more than " + std::to_string(max_listed) +
                         " sockets; the others in it");
      if (cut != nullptr) *cut = true;
      break;
    }
    const std::string path = path_ + "/" + entry->d_name;
    struct stat info;
    if (::fstatat(fd_, entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // just removed
    const std::string problem = socket_problem(path, info, owner_);
    if (problem.empty()) {
      entries.push_back({*pid, path, owner_, info.st_dev, info.st_ino});
    } else {
      refused->push_back(problem);
    }
  }
  ::closedir(listing);
  return entries;
}

std::optional<SocketEntry> SocketDirectory::socket_of(pid_t pid, std::string* refused) const {
  if (fd_ < 0) return std::nullopt;
  const std::string name = std::to_string(pid) + ".sock";
  const std::string path = path_ + "/" + name;
  struct stat info;
  if (::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) *refused = "cannot inspect " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  *refused = socket_problem(path, info, owner_);
  if (!refused->empty()) return std::nullopt;
  return SocketEntry{pid, path, owner_, info.st_dev, info.st_ino};
}

bool SocketDirectory::remove(const SocketEntry& entry) const {
  if (fd_ < 0) return false;
  const std::string name = entry.path.substr(entry.path.rfind('/') + 1);
  struct stat info;
  if (::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0 ||
      info.st_dev != entry.device || info.st_ino != entry.inode) {
    return false;
  }
  return ::unlinkat(fd_, name.c_str(), 0) == 0;
}

}  // namespace vramshim::cli
