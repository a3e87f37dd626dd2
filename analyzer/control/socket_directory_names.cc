#include "analyzer/control/socket_directory_names.h"

#include <dirent.h>

#include <algorithm>

#include "shim/control/socket_path.h"

namespace vramshim::cli {

std::vector<std::pair<std::string, uid_t>> tmp_socket_directories(std::optional<uid_t> only_uid) {
  std::vector<std::pair<std::string, uid_t>> directories;
  DIR* listing = ::opendir("/tmp");
  if (listing == nullptr) return directories;
  while (const dirent* entry = ::readdir(listing)) {
    const std::optional<uid_t> uid = control::uid_of_tmp_socket_directory(entry->d_name);
    if (uid && (!only_uid || *uid == *only_uid)) {
      directories.emplace_back("/tmp/" + std::string(entry->d_name), *uid);
    }
  }
  ::closedir(listing);
  std::sort(directories.begin(), directories.end());
  return directories;
}

}  // namespace vramshim::cli
