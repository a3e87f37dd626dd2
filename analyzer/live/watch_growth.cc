#include "analyzer/live/watch_growth.h"

#include <algorithm>

namespace vramshim::live {
namespace {

std::string text_of(const nlohmann::json& object, const char* name) {
  return object.contains(name) && object[name].is_string() ? object[name].get<std::string>()
                                                           : std::string("?");
}

std::uint64_t unsigned_of(const nlohmann::json& object, const char* name) {
  return object.contains(name) && object[name].is_number_unsigned()
             ? object[name].get<std::uint64_t>()
             : 0;
}

}  // namespace

void WatchGrowth::update(const nlohmann::json& sites) {
  const bool first = updates_ == 0;
  std::size_t listed = 0;
  std::uint64_t least = 0;
  for (auto& [key, site] : followed_) site.listed = false;
  for (const nlohmann::json& site : sites.is_array() ? sites : nlohmann::json::array()) {
    if (!site.is_object()) continue;
    const std::int64_t stack = site.contains("stack") && site["stack"].is_number_integer()
                                   ? site["stack"].get<std::int64_t>()
                                   : -1;
    const std::uint64_t bytes = unsigned_of(site, "live_bytes");
    ++listed;
    least = listed == 1 ? bytes : std::min(least, bytes);
    const auto [at, added] = followed_.try_emplace(Key{stack, text_of(site, "kind")});
    Followed& followed = at->second;
    if (added) {
      followed.label = text_of(site, "label");
      // New since the first look: it held nothing then, or at most the first answer's least.
      followed.first_bytes = first ? bytes : first_full_ ? std::min(first_floor_, bytes) : 0;
    }
    followed.live_bytes = bytes;
    followed.listed = true;
  }
  latest_full_ = listed >= asked_;
  if (first) {
    first_full_ = latest_full_;
    first_floor_ = first_full_ ? least : 0;
  }
  // Sites the latest answer leaves out though it was not full hold nothing now.
  if (!latest_full_) {
    for (auto& [key, site] : followed_) {
      if (!site.listed) {
        site.live_bytes = 0;
        site.listed = true;
      }
    }
  }
  ++updates_;
}

std::vector<GrowingLabel> WatchGrowth::fastest(std::size_t count) const {
  std::map<std::pair<std::string, std::string>, GrowingLabel> by_label;
  for (const auto& [key, site] : followed_) {
    if (!site.listed) continue;  // unknown now: below the latest full answer's least
    GrowingLabel& row = by_label[{site.label, key.second}];
    row.label = site.label;
    row.kind = key.second;
    row.gained_bytes +=
        static_cast<std::int64_t>(site.live_bytes) - static_cast<std::int64_t>(site.first_bytes);
    row.live_bytes += site.live_bytes;
  }
  std::vector<GrowingLabel> rows;
  for (auto& [key, row] : by_label) {
    if (row.gained_bytes > 0) rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const GrowingLabel& a, const GrowingLabel& b) {
    return a.gained_bytes > b.gained_bytes;
  });
  if (rows.size() > count) rows.resize(count);
  return rows;
}

}  // namespace vramshim::live
