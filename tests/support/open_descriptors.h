// The descriptors the calling process has open, as /proc/self/fd lists them (the listing's own
// left out).
#pragma once

#include <dirent.h>

#include <cstdlib>
#include <set>

namespace vramshim::testing {

inline std::set<int> open_descriptors() {
  std::set<int> fds;
  DIR* directory = opendir("/proc/self/fd");
  if (directory == nullptr) return fds;
  const int own = dirfd(directory);
  while (const dirent* entry = readdir(directory)) {
    const int fd = std::atoi(entry->d_name);
    if (entry->d_name[0] != '.' && fd != own) fds.insert(fd);
  }
  closedir(directory);
  return fds;
}

}  // namespace vramshim::testing
