#include "analyzer/site_diff.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "analyzer/text_report.h"
#include "analyzer/units.h"

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
  return a.live_bytes == b.live_bytes && a.live_count == b.live_count &&
         a.total_bytes == b.total_bytes && a.total_count == b.total_count &&
         a.peak_bytes == b.peak_bytes && a.bytes_at_peak == b.bytes_at_peak;
}

std::string signed_count(int64_t value) { return (value > 0 ? "+" : "") + format_count(value); }

std::string signed_allocations(int64_t value) {
  return signed_count(value) + (value == 1 || value == -1 ? " allocation" : " allocations");
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

void render_diff(std::ostream& out, const Report& old_report,
                 const std::vector<SiteView>& old_sites, const FrameTable& old_table,
                 const Report& new_report, const std::vector<SiteView>& new_sites,
                 const FrameTable& new_table, const std::vector<SiteChange>& changes, size_t top) {
  const SiteFigures before = sum_figures(old_sites);
  const SiteFigures after = sum_figures(new_sites);
  out << "old:      " << old_report.source << " (" << describe_process(old_report) << ")\n"
      << "new:      " << new_report.source << " (" << describe_process(new_report) << ")\n"
      << "live:     " << format_bytes(before.live_bytes) << " -> " << format_bytes(after.live_bytes)
      << " (" << format_signed_bytes(after.live_bytes - before.live_bytes) << "), allocations "
      << format_count(before.live_count) << " -> " << format_count(after.live_count) << " ("
      << signed_count(after.live_count - before.live_count) << ")\n"
      << "peak:     " << format_bytes(old_report.peak_in_use_bytes) << " -> "
      << format_bytes(new_report.peak_in_use_bytes) << " ("
      << format_signed_bytes(new_report.peak_in_use_bytes - old_report.peak_in_use_bytes) << ")\n"
      << "total:    " << format_bytes(before.total_bytes) << " -> "
      << format_bytes(after.total_bytes) << " allocated in " << format_count(before.total_count)
      << " -> " << format_count(after.total_count) << " allocations\n";
  const size_t shown = std::min(top, changes.size());
  out << "\nTop " << shown << " of " << changes.size()
      << " changed sites by growth of live bytes:\n";
  for (size_t i = 0; i < shown; ++i) {
    const SiteChange& c = changes[i];
    const SiteView& site = c.new_site != nullptr ? *c.new_site : *c.old_site;
    const FrameTable& table = c.new_site != nullptr ? new_table : old_table;
    const char* mark = c.old_site == nullptr ? "NEW  " : c.new_site == nullptr ? "GONE " : "";
    out << "\n#" << (i + 1) << "  " << mark << format_signed_bytes(c.live_growth()) << " live  ["
        << site.kind << "]\n"
        << "    live " << format_bytes(c.before.live_bytes) << " -> "
        << format_bytes(c.after.live_bytes) << " ("
        << signed_allocations(c.after.live_count - c.before.live_count) << "); total "
        << format_bytes(c.before.total_bytes) << " -> " << format_bytes(c.after.total_bytes) << " ("
        << signed_allocations(c.after.total_count - c.before.total_count) << "); at peak "
        << format_bytes(c.before.bytes_at_peak) << " -> " << format_bytes(c.after.bytes_at_peak)
        << '\n';
    if (site.frames.empty()) out << "    [no stack]\n";
    for (uint32_t id : site.frames) out << "    " << describe_frame(table.frame(id)) << '\n';
  }
}

}  // namespace vramshim::analyzer
