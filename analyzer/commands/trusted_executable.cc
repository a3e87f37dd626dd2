#include "analyzer/commands/trusted_executable.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <stdexcept>

namespace vramshim::cli {
namespace {

// Ours or root's, and writable by no one else, except a directory with the sticky bit (/tmp), in
// which others cannot rename or remove what is ours or root's. A symbolic link's own mode means
// nothing: its owner alone can change it.
bool nobody_else_controls(const std::filesystem::path& path, struct stat* info) {
  if (::lstat(path.c_str(), info) != 0 || (info->st_uid != 0 && info->st_uid != ::geteuid())) {
    return false;
  }
  return S_ISLNK(info->st_mode) || (info->st_mode & 022) == 0 ||
         (S_ISDIR(info->st_mode) && (info->st_mode & S_ISVTX) != 0);
}

// Resolves `path` a name at a time, as the kernel does, and returns where it leads when every
// directory passed through, every link followed and the last name itself are ones no other user
// controls; so no other user can change what `path` itself names between this check and its use.
std::optional<std::string> resolve_through_trusted_names(const std::string& path) {
  constexpr int kMaxLinks = 40;  // the kernel's own limit (ELOOP)
  std::deque<std::string> names;
  for (const auto& name : std::filesystem::absolute(path).relative_path()) names.push_back(name);
  struct stat info;
  if (!nobody_else_controls("/", &info)) return std::nullopt;
  std::filesystem::path resolved = "/";
  int links = 0;
  while (!names.empty()) {
    const std::string name = names.front();
    names.pop_front();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      resolved = resolved.parent_path();
      continue;
    }
    const std::filesystem::path next = resolved / name;
    if (!nobody_else_controls(next, &info)) return std::nullopt;
    if (!S_ISLNK(info.st_mode)) {
      resolved = next;
      continue;
    }
    char target[PATH_MAX];
    const ssize_t length = ::readlink(next.c_str(), target, sizeof(target) - 1);
    if (length <= 0 || ++links > kMaxLinks) return std::nullopt;
    const std::filesystem::path link_target(std::string(target, static_cast<size_t>(length)));
    if (link_target.is_absolute()) resolved = "/";
    std::deque<std::string> rest;
    for (const auto& part : link_target.relative_path()) rest.push_back(part);
    names.insert(names.begin(), rest.begin(), rest.end());
  }
  return resolved.string();
}

}  // namespace

std::optional<std::string> trusted_file(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  // The resolved path has no link left: the names on its way decide what it names, whoever could
  // point `path` elsewhere (the resolved path is what is used).
  const std::optional<std::string> checked = resolve_through_trusted_names(resolved);
  struct stat info;
  if (!checked || ::stat(checked->c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return std::nullopt;
  }
  return checked;
}

std::optional<std::string> trusted_executable(const std::string& path) {
  std::optional<std::string> trusted = trusted_file(path);
  if (trusted && ::access(trusted->c_str(), X_OK) != 0) return std::nullopt;
  return trusted;
}

std::optional<std::string> trusted_program_path(const std::string& path) {
  // The very name returned is the one checked (lexically_normal drops ".." before any link).
  const std::string lexical = std::filesystem::absolute(path).lexically_normal().string();
  const std::optional<std::string> target = resolve_through_trusted_names(lexical);
  struct stat info;
  if (!target || ::stat(target->c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      ::access(target->c_str(), X_OK) != 0) {
    return std::nullopt;
  }
  return lexical;
}

std::string trusted_as_root(const std::string& path, bool executable) {
  if (::geteuid() != 0) return path;
  const std::optional<std::string> trusted =
      executable ? trusted_executable(path) : trusted_file(path);
  if (trusted) return *trusted;
  throw std::runtime_error(
      path +
      " is not a file that only root controls (it, a directory on the way to "
      "it or a link it goes through belongs to another user or is writable by "
      "others): as root, vramshim runs and preloads nothing another user could "
      "have put there or could change");
}

}  // namespace vramshim::cli
