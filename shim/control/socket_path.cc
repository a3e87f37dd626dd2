#include "shim/control/socket_path.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace vramshim::control {

std::string default_socket_directory(const std::string& runtime_dir, uid_t uid) {
  // One spelling per directory ("/run/user/0/" is "/run/user/0"), so that the CLI, which tells
  // directories apart by name, looks in each once.
  const size_t end = runtime_dir.find_last_not_of('/');
  if (end != std::string::npos) return runtime_dir.substr(0, end + 1) + "/vramshim";
  if (!runtime_dir.empty()) return "/vramshim";  // "/" alone
  return "/tmp/vramshim-" + std::to_string(uid);
}

std::vector<std::string> socket_directories(const std::string& runtime_dir, uid_t uid) {
  std::vector<std::string> directories;
  if (!runtime_dir.empty()) directories.push_back(default_socket_directory(runtime_dir, uid));
  directories.push_back(default_socket_directory("", uid));
  return directories;
}

std::string verify_private_directory(const std::string& directory, const struct stat& info,
                                     uid_t uid) {
  if (!S_ISDIR(info.st_mode)) return directory + " is not a directory";
  if (info.st_uid != uid) {
    return directory + " is owned by uid " + std::to_string(info.st_uid) + ", not " +
           std::to_string(uid);
  }
  if ((info.st_mode & 077) != 0) return directory + " has group or other permissions";
  return {};
}

namespace {

// Sets mode 0700 on `directory`, which this process has just made. mkdir applies the umask; a umask
// cannot add bits but may remove the owner's, so they are set exactly, on the directory opened
// without following a link (O_PATH: the umask may have left the owner no read permission) and
// checked as an existing one is (mkdir gave it no group or other bits), in case whoever may write
// the parent put something else at its name meanwhile (the mode would go to what a link names).
// Returns an empty string on success, else why not.
std::string restrict_new_directory(const std::string& directory, uid_t uid) {
  const int fd = ::open(directory.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "cannot open " + directory + ": " + std::strerror(errno);
  struct stat info;
  const std::string opened = "/proc/self/fd/" + std::to_string(fd);
  std::string problem = ::fstat(fd, &info) != 0
                            ? "cannot inspect " + directory + ": " + std::strerror(errno)
                            : verify_private_directory(directory, info, uid);
  if (problem.empty() && ::chmod(opened.c_str(), 0700) != 0 &&
      (errno != ENOENT || ::chmod(directory.c_str(), 0700) != 0)) {
    // Through the descriptor's /proc entry; by name only where /proc is not mounted.
    problem = "cannot set mode 0700 on " + directory + ": " + std::strerror(errno);
  }
  ::close(fd);
  return problem;
}

}  // namespace

std::string prepare_private_directory(const std::string& directory, uid_t uid) {
  if (::mkdir(directory.c_str(), 0700) == 0) return restrict_new_directory(directory, uid);
  if (errno != EEXIST) return "cannot create " + directory + ": " + std::strerror(errno);
  struct stat info;
  if (::lstat(directory.c_str(), &info) != 0) {
    return "cannot inspect " + directory + ": " + std::strerror(errno);
  }
  return verify_private_directory(directory, info, uid);
}

std::optional<uid_t> uid_from_digits(std::string_view digits) {
  constexpr std::uint64_t kHighestUid = static_cast<uid_t>(-1) - 1;
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (digits.empty() || (digits[0] == '0' && digits.size() > 1) ||
      !std::all_of(digits.begin(), digits.end(), is_digit)) {
    return std::nullopt;
  }
  std::uint64_t uid = 0;
  for (const char digit : digits) {
    uid = uid * 10 + static_cast<std::uint64_t>(digit - '0');
    if (uid > kHighestUid) return std::nullopt;  // before it could overflow
  }
  return static_cast<uid_t>(uid);
}

std::optional<uid_t> uid_of_tmp_socket_directory(std::string_view name, bool* fallback) {
  constexpr std::string_view kPrefix = "vramshim-";
  constexpr size_t kMkdtempSuffixLength = 6;  // mkdtemp's six letters and digits
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) {
    const std::string_view suffix = name.substr(dot + 1);
    if (suffix.size() != kMkdtempSuffixLength ||
        !std::all_of(suffix.begin(), suffix.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
      return std::nullopt;
    }
  }
  if (fallback != nullptr) *fallback = dot != std::string_view::npos;
  return uid_from_digits(name.substr(0, dot));
}

std::vector<std::string> fallback_socket_directories(uid_t uid, const std::string& parent) {
  std::vector<std::string> directories;
  DIR* listing = ::opendir(parent.c_str());
  if (listing == nullptr) return directories;
  while (const dirent* entry = ::readdir(listing)) {
    bool fallback = false;
    if (uid_of_tmp_socket_directory(entry->d_name, &fallback) == uid && fallback) {
      directories.push_back(parent + "/" + entry->d_name);
    }
  }
  ::closedir(listing);
  return directories;
}

std::string make_fallback_socket_directory(uid_t uid, std::string* error) {
  const std::string pattern = default_socket_directory("", uid) + ".XXXXXX";
  std::string directory = pattern;
  if (::mkdtemp(&directory[0]) == nullptr) {
    *error = "cannot create a directory " + pattern + ": " + std::strerror(errno);
    return {};
  }
  *error = restrict_new_directory(directory, uid);
  if (error->empty()) return directory;
  ::rmdir(directory.c_str());
  return {};
}

}  // namespace vramshim::control
