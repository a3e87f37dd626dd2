#include "analyzer/control/socket_directory_names.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace vramshim::cli {
namespace {

constexpr std::string_view kTmpPrefix = "vramshim-";
// mkdtemp replaces six X's with letters and digits.
constexpr size_t kFallbackSuffixLength = 6;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The uid of a name in /tmp: "vramshim-UID" or "vramshim-UID.XXXXXX"; nullopt for any other name.
std::optional<uid_t> uid_of_tmp_name(std::string_view name) {
  if (name.substr(0, kTmpPrefix.size()) != kTmpPrefix) return std::nullopt;
  name.remove_prefix(kTmpPrefix.size());
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) {
    const std::string_view suffix = name.substr(dot + 1);
    if (suffix.size() != kFallbackSuffixLength ||
        !std::all_of(suffix.begin(), suffix.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; })) {
      return std::nullopt;
    }
  }
  return uid_from_digits(name.substr(0, dot));
}

}  // namespace

std::optional<uid_t> uid_from_digits(std::string_view digits) {
  constexpr std::uint64_t kHighestUid = static_cast<uid_t>(-1) - 1;
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

std::vector<std::pair<std::string, uid_t>> tmp_socket_directories(std::optional<uid_t> only_uid) {
  std::vector<std::pair<std::string, uid_t>> directories;
  DIR* listing = ::opendir("/tmp");
  if (listing == nullptr) return directories;
  while (const dirent* entry = ::readdir(listing)) {
    const std::optional<uid_t> uid = uid_of_tmp_name(entry->d_name);
    if (uid && (!only_uid || *uid == *only_uid)) {
      directories.emplace_back("/tmp/" + std::string(entry->d_name), *uid);
    }
  }
  ::closedir(listing);
  std::sort(directories.begin(), directories.end());
  return directories;
}

}  // namespace vramshim::cli
