#include "analyzer/live/shimmed_sockets.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "analyzer/control/control_client.h"
#include "analyzer/control/refused_directories.h"
#include "analyzer/control/socket_directory_names.h"
#include "shim/control/socket_path.h"

namespace vramshim::live {
namespace {

// (directory, owner) for every user's runtime directory in /run/user: /run/user/UID/vramshim.
void add_runtime_directories(std::vector<std::pair<std::string, uid_t>>* directories) {
  DIR* listing = ::opendir("/run/user");
  if (listing == nullptr) return;
  while (const dirent* entry = ::readdir(listing)) {
    const std::optional<uid_t> uid = control::uid_from_digits(entry->d_name);
    if (uid)
      directories->emplace_back("/run/user/" + std::string(entry->d_name) + "/vramshim", *uid);
  }
  ::closedir(listing);
}

}  // namespace

std::vector<cli::SocketEntry> shimmed_sockets(const std::string& only_directory,
                                              std::vector<std::string>* refused,
                                              std::set<uid_t>* cut) {
  std::vector<std::pair<std::string, uid_t>> directories;
  for (const std::string& path : cli::socket_directories(only_directory)) {
    directories.emplace_back(path, ::geteuid());
  }
  if (only_directory.empty() && ::geteuid() == 0) {
    add_runtime_directories(&directories);
    for (auto& directory : cli::tmp_socket_directories(std::nullopt)) {
      directories.push_back(std::move(directory));
    }
  }
  std::vector<cli::SocketEntry> sockets;
  // Each directory once for each uid it may belong to: root's XDG_RUNTIME_DIR may name another
  // user's runtime directory (after `su` without `-`), refused as root's and still that user's.
  std::set<std::pair<std::string, uid_t>> seen;
  // What each user's directories may add, together: a user may make any number of them in /tmp.
  std::map<uid_t, size_t> listed;
  cli::RefusedDirectories untrusted;
  for (const auto& [path, owner] : directories) {
    if (!seen.emplace(path, owner).second) continue;
    size_t& owners_listed = listed[owner];
    if (owners_listed >= cli::SocketDirectory::kMaxListed) {
      if (owners_listed++ == cli::SocketDirectory::kMaxListed) {
        if (cut != nullptr) cut->insert(owner);
        refused->push_back("uid " + std::to_string(owner) + " has more than " +
                           std::to_string(cli::SocketDirectory::kMaxListed) +
                           " sockets; those in " + path + " and its later directories are ignored");
      }
      continue;
    }
    const cli::SocketDirectory directory(path, owner);
    if (directory.missing()) continue;
    if (!directory.trusted()) {
      untrusted.add(owner, directory.problem());
      continue;
    }
    std::vector<std::string> refusals;
    bool directory_cut = false;
    const std::vector<cli::SocketEntry> found = directory.sockets(
        &refusals, cli::SocketDirectory::kMaxListed - owners_listed, &directory_cut);
    if (directory_cut && cut != nullptr) cut->insert(owner);
    owners_listed += found.size() + refusals.size();
    sockets.insert(sockets.end(), found.begin(), found.end());
    for (const std::string& why : refusals) refused->push_back(why + "; ignored");
  }
  for (std::string& line : untrusted.lines()) refused->push_back(std::move(line));
  std::sort(sockets.begin(), sockets.end(),
            [](const cli::SocketEntry& a, const cli::SocketEntry& b) { return a.pid < b.pid; });
  return sockets;
}

}  // namespace vramshim::live
