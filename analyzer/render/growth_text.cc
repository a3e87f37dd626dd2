#include "analyzer/render/growth_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/model/figure_sum.h"
#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/omitted_rows.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

// A rate past what a figure holds is shown as the limit: a fit over history slots a picosecond
// apart made 1.1e24 B/s, whose llround is undefined (it printed "-8192.0 PiB/s").
std::string rate_text(double bytes) {
  const double limit = static_cast<double>(kFigureLimit);
  if (bytes >= limit) return "more than " + format_bytes(kFigureLimit);
  if (bytes <= -limit) return "less than " + format_bytes(-kFigureLimit);
  if (std::isnan(bytes)) return "?";
  return format_bytes(static_cast<int64_t>(std::llround(bytes)));
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string innermost(const Report& report, const FrameTable& table, size_t site) {
  std::vector<uint32_t> frames;
  table.visible_stack(report.sites[site].stack, frames);
  return frames.empty() ? std::string("[no stack]")
                        : listed_line(describe_frame(table.frame(frames[0])));
}

std::string step_duration(double seconds) {
  return seconds < 1 ? fixed(seconds * 1000, 1) + " ms" : format_seconds(seconds);
}

// The sites whose growth cannot be told: those beyond what the history's budget holds.
std::string untracked_text(const Report& report, int64_t sites) {
  return format_count_of(sites, "site", "sites") +
         " beyond what the history's budget holds (VRAMSHIM_HISTORY, " +
         format_bytes(report.history ? report.history->budget_bytes : 0) +
         " here): they have no history.";
}

std::string pattern_text(const RepeatingPattern& pattern) {
  return "a step every " + step_duration(pattern.step_seconds) + ", " +
         format_count_of(pattern.allocations_per_step, "allocation", "allocations") +
         " per step (" + format_count(pattern.steps) + " steps in the last " +
         format_count_of(pattern.allocations_searched, "allocation", "allocations") +
         " of the trace)";
}

}  // namespace

void render_growth(std::ostream& out, const Report& report, const FrameTable& table,
                   const GrowthAnalysis& analysis, size_t top) {
  if (!analysis.has_history) {
    out << "This report has no history of its sites (VRAMSHIM_HISTORY=off, a merged report, or a "
           "report of an older vramshim), so growth cannot be told.\n";
    return;
  }
  size_t steady = 0;
  for (const GrowingSite& site : analysis.sites) steady += site.steady;
  if (analysis.pattern) {
    out << "Repeating allocation pattern: " << pattern_text(*analysis.pattern) << ".\n";
  } else {
    out << "No repeating allocation pattern in the trace: rates are per second only.\n";
  }
  const int64_t untracked = analysis.untracked_sites;
  if (steady == 0 && untracked > 0) {
    // Not "no site grew": those without a history may have.
    out << (!report.history || report.history->sites.empty()
                ? "Growth cannot be told for "
                : "No site with a history grew steadily until the report; growth cannot be told "
                  "for ")
        << untracked_text(report, untracked) << '\n';
  } else if (steady == 0) {
    out << "No site grew steadily until the report.\n";
  } else {
    out << "\nGrowing sites, by bytes gained (steadiness: R^2 of a straight-line fit, 1 = an even "
           "rate):\n";
  }
  const size_t listed = top == 0 ? steady : std::min(top, steady);
  size_t shown = 0;
  StackLister lister(table, kTextStackBytes, kTextStackFrames);
  std::vector<uint32_t> frames;
  for (const GrowingSite& site : analysis.sites) {
    if (!site.steady) continue;
    if (shown++ == listed) break;
    out << "\n#" << shown << "  +" << format_bytes(site.gained_bytes) << " since "
        << format_seconds(report.process.seconds_since_start(site.start_time))
        << " after the start: " << rate_text(site.bytes_per_second) << "/s";
    if (site.bytes_per_step) out << ", " << rate_text(*site.bytes_per_step) << " per step";
    out << "  [" << report.sites[site.site].kind << "]\n"
        << "    steadiness " << fixed(site.steadiness, 3) << "; live "
        << format_bytes(site.final_bytes) << " at the end\n";
    table.visible_stack(report.sites[site.site].stack, frames);
    if (frames.empty()) out << "    " << no_stack_line(report) << '\n';
    for (const std::string& line : lister.lines(frames)) out << "    " << line << '\n';
  }
  if (listed < steady) {
    out << '\n'
        << omitted_rows_line(steady - listed, "more growing site", "more growing sites") << '\n';
  }
  const size_t others = analysis.sites.size() - steady;
  if (others > 0) {
    out << '\n'
        << format_count_of(static_cast<int64_t>(others), "other site", "other sites")
        << " gained bytes without growing steadily (a warm-up that levels off, a cache that fills "
           "to a bound, churn, a cycle that has not passed what it held before).\n";
  }
  if (steady > 0 && untracked > 0) {
    out << "\nGrowth cannot be told for " << untracked_text(report, untracked) << '\n';
  }
}

void render_growing_summary(std::ostream& out, const Report& report, const FrameTable& table,
                            const GrowthAnalysis& analysis, size_t top, const char* how) {
  size_t steady = 0;
  for (const GrowingSite& site : analysis.sites) steady += site.steady;
  const size_t listed = top == 0 ? steady : std::min(top, steady);
  size_t shown = 0;
  for (const GrowingSite& site : analysis.sites) {
    if (!site.steady) continue;
    if (shown == listed) break;
    if (shown++ == 0) out << "growing:\n";
    std::string figure = "+" + format_bytes(site.gained_bytes);
    if (figure.size() < 11) figure.insert(0, 11 - figure.size(), ' ');
    out << figure << "  "
        << (site.bytes_per_step ? rate_text(*site.bytes_per_step) + "/step"
                                : rate_text(site.bytes_per_second) + "/s")
        << "  " << innermost(report, table, site.site) << '\n';
  }
  if (listed < steady) {
    out << "           "
        << omitted_rows_line(steady - listed, "more growing site", "more growing sites", how)
        << '\n';
  }
}

}  // namespace vramshim::analyzer
