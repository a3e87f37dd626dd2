#include "analyzer/render/diff_text.h"

#include <string>

#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/omitted_rows.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

// "+3", "-2", "±0": an unchanged count reads as a change of none, not as a count of none.
std::string signed_count(int64_t value) {
  return (value > 0 ? "+" : value == 0 ? "±" : "") + format_count(value);
}

std::string signed_allocations(int64_t value) {
  return signed_count(value) + (value == 1 || value == -1 ? " allocation" : " allocations");
}

}  // namespace

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
  const size_t shown = rows_shown(changes.size(), top);
  out << "\nTop " << shown << " of " << changes.size()
      << " changed sites by growth of live bytes:\n";
  // Each report's stacks as `report --stacks` lists them, half its budget each.
  StackLister old_lister(old_table, kTextStackBytes / 2, kTextStackFrames);
  StackLister new_lister(new_table, kTextStackBytes / 2, kTextStackFrames);
  for (size_t i = 0; i < shown; ++i) {
    const SiteChange& c = changes[i];
    const SiteView& site = c.new_site != nullptr ? *c.new_site : *c.old_site;
    StackLister& lister = c.new_site != nullptr ? new_lister : old_lister;
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
    for (const std::string& line : lister.lines(site.frames)) out << "    " << line << '\n';
  }
  if (shown < changes.size()) {
    out << '\n'
        << omitted_rows_line(changes.size() - shown, "more changed site", "more changed sites")
        << '\n';
  }
}

}  // namespace vramshim::analyzer
