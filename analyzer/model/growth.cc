#include "analyzer/model/growth.h"

#include <algorithm>
#include <cmath>

namespace vramshim::analyzer {
namespace {

// The pattern is looked for in the second half of the trace's last allocations (what the program
// does now, after its warm-up), for periods up to this many.
constexpr size_t kPatternAllocations = 40000;
constexpr size_t kLongestPeriod = 2000;
// Each period is compared over the most recent part of that half first: this share of it, and at
// least this many periods. A program whose step changed inside the half (a phase with one
// allocation more a step, then without) matched a multiple of both steps best over the whole of
// it.
constexpr size_t kRecentShareDivisor = 4;
constexpr size_t kLeastPeriodsCompared = 3;
// A period is a period when this share of allocations has the same stack one period later.
constexpr double kPeriodMatch = 0.9;
// A period whose share of mismatches is this close to the best period's matches as well.
constexpr double kCloseToBest = 0.005;

// What makes a site "growing" in the summary: its rise fits a line at least this well, it kept
// rising over the last quarter of its rise at least at this share of its rate (a warm-up that
// levels off, or a cache that fills to its bound, does not), it rose in at least this many slots,
// and it spans at least this many slots; and it holds more than it held before its last low (one
// that does not is cyclic: see growth_of).
constexpr double kSteadyFit = 0.8;
constexpr double kStillRising = 0.5;
constexpr int kLeastRises = 3;
constexpr size_t kLeastSlots = 5;
// A rise over less time than this has no rate: the shim ticks every 100 ms, and slot times a
// picosecond apart (a crafted history) made rates of 10^24 bytes per second.
constexpr double kLeastSeconds = 1e-3;

struct Fit {
  double slope = 0;
  double r_squared = 0;
};

Fit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mean_x = 0, mean_y = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mean_x += x[i];
    mean_y += y[i];
  }
  mean_x /= n;
  mean_y /= n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
    syy += (y[i] - mean_y) * (y[i] - mean_y);
  }
  Fit fit;
  if (sxx <= 0) return fit;
  fit.slope = sxy / sxx;
  fit.r_squared = syy > 0 ? (sxy * sxy) / (sxx * syy) : 0;
  return fit;
}

// The site's live bytes at the end of each slot from its first point on.
std::vector<int64_t> slot_values(const SiteHistory& series, size_t slots, size_t* first) {
  std::vector<int64_t> values;
  if (series.points.empty()) return values;
  *first = static_cast<size_t>(series.points.front().slot);
  int64_t value = 0;
  size_t next = 0;
  for (size_t slot = *first; slot < slots; ++slot) {
    if (next < series.points.size() && static_cast<size_t>(series.points[next].slot) == slot) {
      value = series.points[next++].last;
    }
    values.push_back(value);
  }
  return values;
}

std::optional<GrowingSite> growth_of(const SiteHistory& series, const History& history) {
  size_t first = 0;
  const std::vector<int64_t> values = slot_values(series, history.slot_times.size(), &first);
  if (values.empty() || values.back() <= 0) return std::nullopt;
  // The base: the last slot holding the least the site held from then on.
  const int64_t least = *std::min_element(values.begin(), values.end());
  size_t base = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] <= least) base = i;
  }
  if (values.back() <= values[base]) return std::nullopt;
  // Cyclic: before its last low the site already held as much as it holds now, and then gave it
  // all back down to that low (the least it ever held, from its first point on): memory freed
  // every N steps, a cache emptied and filling again. Its rise is a new cycle, not growth, until
  // it passes what it held before.
  const int64_t held_before = *std::max_element(values.begin(), values.begin() + base + 1);
  GrowingSite growing;
  growing.cyclic = held_before >= values.back();
  growing.site = static_cast<size_t>(series.site);
  growing.final_bytes = values.back();
  growing.gained_bytes = values.back() - values[base];
  growing.start_time = history.slot_times[first + base];
  const size_t span = values.size() - base;
  if (span < 2) return growing;
  std::vector<double> x, y;
  int rises = 0;
  for (size_t i = base; i < values.size(); ++i) {
    x.push_back(history.slot_times[first + i] - growing.start_time);
    y.push_back(static_cast<double>(values[i]));
    if (i > base && values[i] > values[i - 1]) ++rises;
  }
  const Fit fit = fit_line(x, y);
  if (x.back() < kLeastSeconds || !std::isfinite(fit.slope)) return growing;  // no fit
  growing.bytes_per_second = fit.slope;
  growing.steadiness = fit.r_squared;
  // Still rising over the last quarter of the rise's time, at a good share of its rate?
  const double quarter_start = x.back() * 0.75;
  size_t q = 0;
  while (q + 1 < x.size() && x[q] < quarter_start) ++q;
  const double late_rise = y.back() - y[q];
  const double expected = fit.slope * (x.back() - x[q]);
  growing.steady = !growing.cyclic && span >= kLeastSlots && rises >= kLeastRises &&
                   fit.slope > 0 && fit.r_squared >= kSteadyFit && expected > 0 &&
                   late_rise >= kStillRising * expected;
  return growing;
}

// The bytes a traced allocation (or its free) of `size` bytes stands for. With stacks sampled
// (VRAMSHIM_STACKS=sample) the trace holds only the sampled allocations, each sampled with
// probability p = 1 - exp(-size / sample_bytes): it stands for size / p bytes, as it counts in its
// site's figures (shim/report/FORMAT.md, "sites"; ByteSampler::weight_of).
double traced_bytes(const CaptureConfig& config, int64_t size) {
  const auto bytes = static_cast<double>(size);
  if (config.stacks != "sample" || config.sample_bytes <= 0) return bytes;
  const double p = -std::expm1(-bytes / static_cast<double>(config.sample_bytes));
  return p > 0 ? bytes / p : bytes;
}

// The site's own net bytes per step over the pattern's whole steps that began once it began to
// grow (at its low, start_time: the frees of an earlier cycle or of a warm-up are no part of its
// growth), when it allocated in them; else its rate over a step's time.
double bytes_per_step(const Report& report, const RepeatingPattern& pattern,
                      const GrowingSite& growing) {
  const int64_t stack = report.sites[growing.site].stack;
  const auto period = static_cast<uint64_t>(pattern.allocations_per_step);
  double net = 0;
  bool seen = false;
  bool counting = false;
  uint64_t allocations = 0;  // in the pattern's steps before the event
  int64_t steps = 0;         // counted
  for (size_t e = pattern.first_event; e < pattern.end_event; ++e) {
    const TraceEvent& event = report.trace->events[e];
    if (event.type != "alloc" && event.type != "free") continue;
    if (event.type == "alloc" && allocations++ % period == 0 && !counting &&
        event.time >= growing.start_time) {
      // A step's first allocation at or after the site's low: count from this step on.
      counting = true;
      steps = pattern.steps - static_cast<int64_t>((allocations - 1) / period);
    }
    if (!counting || event.stack != stack || stack < 0) continue;
    const double bytes = traced_bytes(report.config, event.size);
    if (event.type == "alloc") {
      net += bytes;
      seen = true;
    } else {
      net -= bytes;
    }
  }
  if (!seen) return growing.bytes_per_second * pattern.step_seconds;
  return net / static_cast<double>(steps);
}

}  // namespace

std::optional<RepeatingPattern> find_repeating_pattern(const Trace& trace) {
  std::vector<size_t> allocations;  // event indices, oldest first
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events[i].type == "alloc") allocations.push_back(i);
  }
  const size_t window = std::min(allocations.size(), kPatternAllocations) / 2;
  allocations.erase(allocations.begin(), allocations.end() - window);
  const size_t n = allocations.size();
  auto stack = [&](size_t a) { return trace.events[allocations[a]].stack; };
  const size_t longest = std::min(kLongestPeriod, n / kLeastPeriodsCompared);
  // The step among the periods, each compared over the allocations from `first(period)` on: each
  // period's share of them whose stack differs from the one a period later. The first period
  // within 90 % is not the step: runs of one site's allocations (a step's churn) make every short
  // period nearly match. The step is the shortest period that matches about as well as the best
  // one (its multiples match as well); 0 when none matches.
  struct Step {
    size_t period = 0;
    double mismatch_share = 1;
  };
  auto find_step = [&](auto first) {
    std::vector<double> mismatch_share(longest + 1, 1.0);
    double best = 1 - kPeriodMatch;
    for (size_t period = 1; period <= longest; ++period) {
      const size_t compared = n - period - first(period);
      // Counting stops once the period cannot be among the best.
      const auto allowed =
          static_cast<size_t>(static_cast<double>(compared) * (best + kCloseToBest));
      size_t mismatches = 0;
      for (size_t a = first(period); a < n - period && mismatches <= allowed; ++a) {
        mismatches += stack(a) != stack(a + period);
      }
      if (mismatches > allowed) continue;
      mismatch_share[period] = static_cast<double>(mismatches) / static_cast<double>(compared);
      best = std::min(best, mismatch_share[period]);
    }
    for (size_t period = 1; period <= longest; ++period) {
      if (mismatch_share[period] <= best + kCloseToBest &&
          mismatch_share[period] <= 1 - kPeriodMatch) {
        return Step{period, mismatch_share[period]};
      }
    }
    return Step{};
  };
  // The step of what the program does now: over the most recent allocations first; over the whole
  // window when they repeat no period (a sampled trace's noise weighs more in fewer).
  Step step = find_step([&](size_t period) {
    return n - std::min(n, std::max(n / kRecentShareDivisor, kLeastPeriodsCompared * period));
  });
  if (step.period == 0) step = find_step([](size_t) { return size_t{0}; });
  if (step.period == 0) return std::nullopt;
  // Its steps reach back as far as it matches about as well: from the earliest allocation after
  // which its share of mismatches is within kCloseToBest of the share it was found with.
  const size_t period = step.period;
  size_t first = n - period;
  size_t mismatches = 0;
  for (size_t a = n - period; a-- > 0;) {
    mismatches += stack(a) != stack(a + period);
    if (static_cast<double>(mismatches) <=
        (step.mismatch_share + kCloseToBest) * static_cast<double>(n - period - a)) {
      first = a;
    }
  }
  RepeatingPattern pattern;
  pattern.allocations_per_step = static_cast<int64_t>(period);
  pattern.steps = static_cast<int64_t>((n - 1 - first) / period);
  pattern.allocations_searched = static_cast<int64_t>(n);
  if (pattern.steps == 0) return std::nullopt;
  pattern.first_event = allocations[first];
  pattern.end_event = allocations[first + static_cast<size_t>(pattern.steps) * period];
  pattern.step_seconds =
      (trace.events[pattern.end_event].time - trace.events[pattern.first_event].time) /
      static_cast<double>(pattern.steps);
  if (pattern.step_seconds <= 0) return std::nullopt;
  return pattern;
}

GrowthAnalysis analyze_growth(const Report& report) {
  GrowthAnalysis analysis;
  if (!report.history) return analysis;
  analysis.has_history = true;
  analysis.untracked_sites = report.history->untracked_sites;
  if (report.trace) analysis.pattern = find_repeating_pattern(*report.trace);
  for (const SiteHistory& series : report.history->sites) {
    std::optional<GrowingSite> growing = growth_of(series, *report.history);
    if (!growing) continue;
    if (analysis.pattern) {
      growing->bytes_per_step = bytes_per_step(report, *analysis.pattern, *growing);
    }
    analysis.sites.push_back(*growing);
  }
  std::sort(analysis.sites.begin(), analysis.sites.end(),
            [](const GrowingSite& a, const GrowingSite& b) {
              if (a.gained_bytes != b.gained_bytes) return a.gained_bytes > b.gained_bytes;
              return a.site < b.site;
            });
  return analysis;
}

GrowthAnalysis analyze_growth(const Report& report, const FrameTable& table,
                              const SiteFilter& filter) {
  GrowthAnalysis analysis = analyze_growth(report);
  analysis.sites.erase(std::remove_if(analysis.sites.begin(), analysis.sites.end(),
                                      [&](const GrowingSite& site) {
                                        return !filter_keeps(filter, table,
                                                             report.sites[site.site].stack);
                                      }),
                       analysis.sites.end());
  return analysis;
}

}  // namespace vramshim::analyzer
