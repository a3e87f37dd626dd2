#include "analyzer/commands/trusted_executable.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace vramshim::cli {
namespace {

bool nobody_else_controls(const std::filesystem::path& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && (info.st_uid == 0 || info.st_uid == ::geteuid()) &&
         (info.st_mode & 022) == 0;
}

}  // namespace

std::optional<std::string> trusted_executable(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  struct stat info;
  if (::stat(resolved, &info) != 0 || !S_ISREG(info.st_mode) || ::access(resolved, X_OK) != 0) {
    return std::nullopt;
  }
  // The resolved path has no symbolic link left: its directories decide what it names.
  for (std::filesystem::path step = resolved;; step = step.parent_path()) {
    if (!nobody_else_controls(step)) return std::nullopt;
    if (step == step.root_path()) break;
  }
  return std::string(resolved);
}

}  // namespace vramshim::cli
