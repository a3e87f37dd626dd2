#include "analyzer/control/refused_directories.h"

namespace vramshim::cli {

void RefusedDirectories::add(uid_t owner, const std::string& problem) {
  Refusals& refusals = by_owner_[owner];
  if (refusals.count++ < kShownPerOwner) refusals.shown.push_back(problem);
}

std::vector<std::string> RefusedDirectories::lines() const {
  std::vector<std::string> lines;
  for (const auto& [owner, refusals] : by_owner_) {
    for (const std::string& problem : refusals.shown) {
      lines.push_back(problem + "; its sockets are ignored");
    }
    if (refusals.count > refusals.shown.size()) {
      lines.push_back(std::to_string(refusals.count - refusals.shown.size()) +
                      " more directories for uid " + std::to_string(owner) +
                      " were refused too; their sockets are ignored");
    }
  }
  return lines;
}

}  // namespace vramshim::cli
