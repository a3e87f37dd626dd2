// Directories refused as a user's socket directories, told in a few lines per user: anyone may
// make any number of names /tmp/vramshim-UID.* for any uid, and a line for each would bury the
// lines that matter.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace vramshim::cli {

class RefusedDirectories {
 public:
  // A directory that `owner`'s directories were looked for in was refused: `problem` says why.
  void add(uid_t owner, const std::string& problem);
  // Per owner, the first kShownPerOwner problems, a line each, then how many more were refused.
  std::vector<std::string> lines() const;

  static constexpr size_t kShownPerOwner = 3;

 private:
  struct Refusals {
    size_t count = 0;
    std::vector<std::string> shown;
  };
  std::map<uid_t, Refusals> by_owner_;
};

}  // namespace vramshim::cli
