#include "analyzer/commands/trusted_executable.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace vramshim::cli {
namespace {

// Ours or root's, and writable by no one else, except a directory with the sticky bit (/tmp), in
// which others cannot rename or remove what is ours or root's.
bool nobody_else_controls(const std::filesystem::path& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0 || (info.st_uid != 0 && info.st_uid != ::geteuid())) {
    return false;
  }
  return (info.st_mode & 022) == 0 || (S_ISDIR(info.st_mode) && (info.st_mode & S_ISVTX) != 0);
}

}  // namespace

std::optional<std::string> trusted_executable(const std::string& path) {
  std::optional<std::string> trusted = trusted_file(path);
  if (trusted && ::access(trusted->c_str(), X_OK) != 0) return std::nullopt;
  return trusted;
}

std::optional<std::string> trusted_file(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  struct stat info;
  if (::stat(resolved, &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  // The resolved path has no symbolic link left: its directories decide what it names.
  for (std::filesystem::path step = resolved;; step = step.parent_path()) {
    if (!nobody_else_controls(step)) return std::nullopt;
    if (step == step.root_path()) break;
  }
  return std::string(resolved);
}

}  // namespace vramshim::cli
