#include "analyzer/live/shimmed_sockets.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "analyzer/control/control_client.h"

namespace vramshim::live {
namespace {

// The uid a directory entry's name stands for after `prefix` ("1000" in "vramshim-1000"), or -1.
long uid_after(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  // One spelling per uid: "vramshim-01000" is not user 1000's directory.
  if (digits.empty() || digits.size() > 9 || (digits[0] == '0' && digits.size() > 1) ||
      !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
    return -1;
  }
  return std::stol(digits);
}

// (directory, owner) for every user's default socket directories that `parent` holds, as names
// "PREFIX<uid>" + `suffix`.
void add_users_directories(const std::string& parent, const std::string& prefix,
                           const std::string& suffix,
                           std::vector<std::pair<std::string, uid_t>>* directories) {
  DIR* listing = ::opendir(parent.c_str());
  if (listing == nullptr) return;
  while (const dirent* entry = ::readdir(listing)) {
    const long uid = uid_after(entry->d_name, prefix);
    if (uid >= 0) {
      directories->emplace_back(parent + "/" + entry->d_name + suffix, static_cast<uid_t>(uid));
    }
  }
  ::closedir(listing);
}

}  // namespace

std::vector<cli::SocketEntry> shimmed_sockets(const std::string& only_directory,
                                              std::vector<std::string>* refused) {
  std::vector<std::pair<std::string, uid_t>> directories;
  for (const std::string& path : cli::socket_directories(only_directory)) {
    directories.emplace_back(path, ::geteuid());
  }
  if (only_directory.empty() && ::geteuid() == 0) {
    add_users_directories("/run/user", "", "/vramshim", &directories);
    add_users_directories("/tmp", "vramshim-", "", &directories);
  }
  std::vector<cli::SocketEntry> sockets;
  std::set<std::string> seen;
  for (const auto& [path, owner] : directories) {
    if (!seen.insert(path).second) continue;
    const cli::SocketDirectory directory(path, owner);
    if (directory.missing()) continue;
    if (!directory.trusted()) {
      refused->push_back(directory.problem() + "; its sockets are ignored");
      continue;
    }
    std::vector<std::string> refusals;
    for (const cli::SocketEntry& entry : directory.sockets(&refusals)) sockets.push_back(entry);
    for (const std::string& why : refusals) refused->push_back(why + "; ignored");
  }
  std::sort(sockets.begin(), sockets.end(),
            [](const cli::SocketEntry& a, const cli::SocketEntry& b) { return a.pid < b.pid; });
  return sockets;
}

}  // namespace vramshim::live
