#include "analyzer/model/site_diff.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace vramshim::analyzer {
namespace {

struct SiteKeyHash {
  size_t operator()(const std::pair<std::vector<uint32_t>, std::string>& key) const {
    size_t h = std::hash<std::string>()(key.second);
    for (uint32_t x : key.first) h = (h ^ x) * 0x100000001b3ULL;
    return h;
  }
};

bool same(const SiteFigures& a, const SiteFigures& b) {
#define VRAMSHIM_SITE_FIGURE(name, ...) \
  if (a.name != b.name) return false;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  return true;
}

}  // namespace

std::vector<SiteChange> diff_sites(const std::vector<SiteView>& old_sites,
                                   const FrameTable& old_table,
                                   const std::vector<SiteView>& new_sites,
                                   const FrameTable& new_table) {
  // Translate the new report's display frames into the old table's ids by symbolized key; frames
  // the old report lacks get ids past the old table's end.
  std::unordered_map<std::string, uint32_t> old_ids;
  for (uint32_t id = 0; id < old_table.size(); ++id) old_ids.emplace(old_table.frame(id).key(), id);
  std::vector<uint32_t> translated(new_table.size());
  uint32_t next = static_cast<uint32_t>(old_table.size());
  for (uint32_t id = 0; id < new_table.size(); ++id) {
    auto it = old_ids.find(new_table.frame(id).key());
    translated[id] = it != old_ids.end() ? it->second : next++;
  }

  using Key = std::pair<std::vector<uint32_t>, std::string>;
  std::unordered_map<Key, size_t, SiteKeyHash> old_index;
  for (size_t i = 0; i < old_sites.size(); ++i)
    old_index.emplace(Key{old_sites[i].frames, old_sites[i].kind}, i);
  std::vector<bool> matched(old_sites.size(), false);
  std::vector<SiteChange> changes;
  Key key;
  for (const SiteView& site : new_sites) {
    key.first.clear();
    for (uint32_t id : site.frames) key.first.push_back(translated[id]);
    key.second = site.kind;
    SiteChange change;
    change.new_site = &site;
    change.after = site.figures;
    if (auto it = old_index.find(key); it != old_index.end()) {
      matched[it->second] = true;
      change.old_site = &old_sites[it->second];
      change.before = change.old_site->figures;
    }
    if (!same(change.before, change.after)) changes.push_back(change);
  }
  for (size_t i = 0; i < old_sites.size(); ++i) {
    if (matched[i]) continue;
    SiteChange change;
    change.old_site = &old_sites[i];
    change.before = old_sites[i].figures;
    changes.push_back(change);
  }
  std::stable_sort(changes.begin(), changes.end(), [](const SiteChange& a, const SiteChange& b) {
    if (a.live_growth() != b.live_growth()) return a.live_growth() > b.live_growth();
    const int64_t ta = a.after.total_bytes - a.before.total_bytes;
    const int64_t tb = b.after.total_bytes - b.before.total_bytes;
    return ta > tb;
  });
  return changes;
}

}  // namespace vramshim::analyzer
