#include "analyzer/commands/path_search.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace vramshim::cli {

bool is_executable_file(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> absolute_path_directories() {
  const char* search = std::getenv("PATH");
  std::stringstream entries(search != nullptr ? search : "");
  std::vector<std::string> directories;
  for (std::string entry; std::getline(entries, entry, ':');) {
    if (!entry.empty() && entry.front() == '/') directories.push_back(entry);
  }
  return directories;
}

}  // namespace vramshim::cli
