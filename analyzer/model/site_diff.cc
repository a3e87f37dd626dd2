#include "analyzer/model/site_diff.h"

#include <algorithm>
#include <string>
#include <string_view>
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

constexpr size_t kUnmatched = static_cast<size_t>(-1);

bool same(const SiteFigures& a, const SiteFigures& b) {
#define VRAMSHIM_SITE_FIGURE(name, ...) \
  if (a.name != b.name) return false;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  return true;
}

// Names by number, shared by both reports' keys: a key holds a number per name, not the name (a
// key of the names themselves, kept per unmatched site, made 16 MiB per stack of 4,096 frames of
// 4 KiB names: a report of 2 MB took 1.95 GB to compare).
class NameIds {
 public:
  uint32_t of(std::string_view name) {
    return ids_.try_emplace(name, static_cast<uint32_t>(ids_.size())).first->second;
  }

 private:
  // Views of the names in the sites and frame tables, which outlive the matching.
  std::unordered_map<std::string_view, uint32_t> ids_;
};

constexpr uint32_t kNotPython = static_cast<uint32_t>(-1);

// A site's stack by its functions alone (a Python frame with its file's name), for matching the
// sites of two builds: an edit moves the lines below it, a relink every address (a frame named by
// its module and offset, as _start is without debug information), a checkout elsewhere every path.
// Its kind, then two numbers per named frame: its function's, and its file name's for a Python
// frame (else kNotPython).
std::vector<uint32_t> functions_key(const SiteView& site, const FrameTable& table, NameIds* names) {
  std::vector<uint32_t> key{names->of(site.kind)};
  for (uint32_t id : site.frames) {
    const DisplayFrame& frame = table.frame(id);
    if (frame.function.empty()) continue;  // known by its address only
    key.push_back(names->of(frame.function));
    const std::string_view file(frame.file);
    key.push_back(frame.python ? names->of(file.substr(file.rfind('/') + 1)) : kNotPython);
  }
  return key;
}

struct FunctionsKeyHash {
  size_t operator()(const std::vector<uint32_t>& key) const {
    size_t h = 0xcbf29ce484222325ULL;
    for (uint32_t x : key) h = (h ^ x) * 0x100000001b3ULL;
    return h;
  }
};

// The lines of a site's frames, outermost first: sites of one function key pair in this order (an
// edit shifts lines but keeps their order).
std::vector<int64_t> lines_of(const SiteView& site, const FrameTable& table) {
  std::vector<int64_t> lines;
  for (auto id = site.frames.rbegin(); id != site.frames.rend(); ++id) {
    lines.push_back(table.frame(*id).line);
  }
  return lines;
}

// Pairs the sites left unmatched by their functions alone: in each group of one key with as many
// old sites as new ones, in the order of their lines (a group of unequal counts stays unmatched:
// which of them is new cannot be told).
void match_by_functions(const std::vector<SiteView>& old_sites, const FrameTable& old_table,
                        const std::vector<SiteView>& new_sites, const FrameTable& new_table,
                        std::vector<size_t>* old_of_new, std::vector<bool>* matched) {
  struct Group {
    std::vector<size_t> old_sites, new_sites;
  };
  NameIds names;
  std::unordered_map<std::vector<uint32_t>, Group, FunctionsKeyHash> groups;
  for (size_t i = 0; i < old_sites.size(); ++i) {
    if (!(*matched)[i]) {
      groups[functions_key(old_sites[i], old_table, &names)].old_sites.push_back(i);
    }
  }
  for (size_t i = 0; i < new_sites.size(); ++i) {
    if ((*old_of_new)[i] != kUnmatched) continue;
    const auto group = groups.find(functions_key(new_sites[i], new_table, &names));
    if (group != groups.end()) group->second.new_sites.push_back(i);
  }
  for (auto& [key, group] : groups) {
    if (group.old_sites.size() != group.new_sites.size()) continue;
    auto by_lines = [](const std::vector<SiteView>& sites, const FrameTable& table) {
      return [&sites, &table](size_t a, size_t b) {
        return lines_of(sites[a], table) < lines_of(sites[b], table);
      };
    };
    std::sort(group.old_sites.begin(), group.old_sites.end(), by_lines(old_sites, old_table));
    std::sort(group.new_sites.begin(), group.new_sites.end(), by_lines(new_sites, new_table));
    for (size_t k = 0; k < group.old_sites.size(); ++k) {
      (*old_of_new)[group.new_sites[k]] = group.old_sites[k];
      (*matched)[group.old_sites[k]] = true;
    }
  }
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

  // First the same frames (file:line, or module+offset), then the same functions.
  using Key = std::pair<std::vector<uint32_t>, std::string>;
  std::unordered_map<Key, size_t, SiteKeyHash> old_index;
  for (size_t i = 0; i < old_sites.size(); ++i)
    old_index.emplace(Key{old_sites[i].frames, old_sites[i].kind}, i);
  std::vector<bool> matched(old_sites.size(), false);
  std::vector<size_t> old_of_new(new_sites.size(), kUnmatched);
  Key key;
  for (size_t i = 0; i < new_sites.size(); ++i) {
    key.first.clear();
    for (uint32_t id : new_sites[i].frames) key.first.push_back(translated[id]);
    key.second = new_sites[i].kind;
    if (auto it = old_index.find(key); it != old_index.end()) {
      matched[it->second] = true;
      old_of_new[i] = it->second;
    }
  }
  match_by_functions(old_sites, old_table, new_sites, new_table, &old_of_new, &matched);

  std::vector<SiteChange> changes;
  for (size_t i = 0; i < new_sites.size(); ++i) {
    SiteChange change;
    change.new_site = &new_sites[i];
    change.after = new_sites[i].figures;
    if (old_of_new[i] != kUnmatched) {
      change.old_site = &old_sites[old_of_new[i]];
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
