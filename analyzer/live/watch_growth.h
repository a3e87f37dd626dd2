// What `vramshim watch` shows of the sites: which grew the most since watching began, from the
// `sites N` answers (the N sites holding the most live bytes) of successive looks at one process.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace vramshim::live {

struct GrowingLabel {
  std::string label;  // the site label of the `sites` answer (the site's innermost user frame)
  std::string kind;
  std::int64_t gained_bytes = 0;  // since the first look
  std::uint64_t live_bytes = 0;   // at the latest look
};

// Sites are followed by stack and kind, and shown summed by label and kind, as the CLI's tables
// show them. An answer lists only the `asked` sites holding the most, so a site missing from one
// is known to hold nothing only when the answer was not full; otherwise it held at most the least
// the answer lists. Hence: a site not in the first answer starts from 0 when that answer was not
// full, else from the least it listed (so its gain is a lower bound); a site missing from the
// latest answer counts as 0 when that answer was not full, else it is left out of the sums.
class WatchGrowth {
 public:
  explicit WatchGrowth(std::size_t asked) : asked_(asked) {}

  // `sites`: the `sites` answer's array, in the order the process sent it (most live bytes first).
  void update(const nlohmann::json& sites);

  // The labels that gained the most since the first update, most first; only those that gained.
  std::vector<GrowingLabel> fastest(std::size_t count) const;

 private:
  using Key = std::pair<std::int64_t, std::string>;  // stack and kind
  struct Followed {
    std::string label;
    std::uint64_t first_bytes = 0;  // at the first look, or the bound it started from
    std::uint64_t live_bytes = 0;   // at the latest look that listed it
    bool listed = false;            // in the latest answer
  };

  std::size_t asked_;
  std::size_t updates_ = 0;
  bool latest_full_ = false;
  std::uint64_t first_floor_ = 0;  // the least bytes the first answer listed, when it was full
  bool first_full_ = false;
  std::map<Key, Followed> followed_;
};

}  // namespace vramshim::live
