#include "analyzer/model/site_view.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analyzer/model/figure_sum.h"

namespace vramshim::analyzer {
namespace {

bool pattern_matches(const std::string& pattern, const std::string& text) {
  if (pattern.find_first_of("*?[") != std::string::npos) {
    return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
  }
  return text.find(pattern) != std::string::npos;
}

struct StackKeyHash {
  size_t operator()(const std::pair<std::vector<uint32_t>, std::string>& key) const {
    size_t h = std::hash<std::string>()(key.second);
    for (uint32_t id : key.first) h = (h ^ id) * 0x100000001b3ULL;
    return h;
  }
};

// Stacks compared outermost first, so that sorted output groups by caller.
bool stack_less(const FrameTable& table, const std::vector<uint32_t>& a,
                const std::vector<uint32_t>& b) {
  auto ia = a.rbegin();
  auto ib = b.rbegin();
  for (; ia != a.rend() && ib != b.rend(); ++ia, ++ib) {
    if (*ia != *ib) return table.rank(*ia) < table.rank(*ib);
  }
  return a.size() < b.size();
}

// The site figures of a Site or a RankFigures.
template <typename Figures>
SiteFigures site_figures_of(const Figures& figures) {
  SiteFigures out;
#define VRAMSHIM_SITE_FIGURE(name, ...) out.name = figures.name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  return out;
}

// Shares are appended as they come, then sorted by process and those of one process summed
// (sort_shares): a merged report's site may have a share per rank, 100,000 of them, and looking
// each up among the others was quadratic.
void add_share(std::vector<RankShare>& shares, int64_t process, const SiteFigures& figures) {
  shares.push_back({process, figures});
}

void sort_shares(std::vector<RankShare>& shares) {
  std::stable_sort(shares.begin(), shares.end(),
                   [](const RankShare& a, const RankShare& b) { return a.process < b.process; });
  size_t kept = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (kept > 0 && shares[kept - 1].process == shares[i].process) {
      shares[kept - 1].figures.add(shares[i].figures);
    } else {
      shares[kept++] = shares[i];
    }
  }
  shares.resize(kept);
}

// Whether the filter keeps a site whose visible frames are `frames`.
bool keeps(const SiteFilter& filter, const FrameTable& table, const std::vector<uint32_t>& frames) {
  if (!filter.module.empty() && std::none_of(frames.begin(), frames.end(), [&](uint32_t id) {
        return pattern_matches(filter.module, table.frame(id).module);
      })) {
    return false;
  }
  return filter.function.empty() || std::any_of(frames.begin(), frames.end(), [&](uint32_t id) {
           return pattern_matches(filter.function, table.frame(id).function);
         });
}

}  // namespace

bool filter_keeps(const SiteFilter& filter, const FrameTable& table, int64_t stack) {
  if (filter.module.empty() && filter.function.empty()) return true;
  std::vector<uint32_t> frames;
  table.visible_stack(stack, frames);
  return keeps(filter, table, frames);
}

const char* metric_name(Metric metric) {
  switch (metric) {
    case Metric::kBytesAtPeak:
      return "bytes_at_peak";
    case Metric::kLiveBytes:
      return "live_bytes";
    case Metric::kAllocations:
      return "total_count";
    case Metric::kTotalBytes:
      return "total_bytes";
  }
  return "";
}

const char* metric_title(Metric metric) {
  switch (metric) {
    case Metric::kBytesAtPeak:
      return "bytes at peak";
    case Metric::kLiveBytes:
      return "live bytes";
    case Metric::kAllocations:
      return "allocations";
    case Metric::kTotalBytes:
      return "total bytes";
  }
  return "";
}

bool metric_is_bytes(Metric metric) { return metric != Metric::kAllocations; }

int64_t SiteFigures::value(Metric metric) const {
  switch (metric) {
    case Metric::kBytesAtPeak:
      return bytes_at_peak;
    case Metric::kLiveBytes:
      return live_bytes;
    case Metric::kAllocations:
      return total_count;
    case Metric::kTotalBytes:
      return total_bytes;
  }
  return 0;
}

void SiteFigures::add(const SiteFigures& other) {
#define VRAMSHIM_SITE_FIGURE(name, ...) name = saturating_add(name, other.name);
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
}

SiteFigures figures_of(const Site& site) { return site_figures_of(site); }

SiteFigures figures_of(const RankFigures& rank) { return site_figures_of(rank); }

std::vector<SiteView> collect_sites(const Report& report, const FrameTable& table,
                                    const SiteFilter& filter) {
  std::vector<SiteView> views;
  std::unordered_map<std::pair<std::vector<uint32_t>, std::string>, size_t, StackKeyHash> index;
  std::vector<uint32_t> frames;
  for (const Site& site : report.sites) {
    table.visible_stack(site.stack, frames);
    if (!keeps(filter, table, frames)) continue;
    auto [it, inserted] = index.emplace(std::make_pair(frames, site.kind), views.size());
    if (inserted) {
      SiteView view;
      view.frames = frames;
      view.kind = site.kind;
      views.push_back(std::move(view));
    }
    SiteView& view = views[it->second];
    view.figures.add(figures_of(site));
    for (const RankFigures& rank : site.ranks)
      add_share(view.ranks, rank.process, figures_of(rank));
  }
  for (SiteView& view : views) {
    view.label = table.label(view.frames);
    sort_shares(view.ranks);
  }
  return views;
}

std::vector<SiteView> group_by_label(std::vector<SiteView> by_stack) {
  std::vector<SiteView> views;
  std::map<std::pair<uint32_t, std::string>, size_t> index;
  for (SiteView& stack : by_stack) {
    auto [it, inserted] = index.emplace(std::make_pair(stack.label, stack.kind), views.size());
    if (inserted) {
      SiteView view;
      if (stack.label != kNoFrame) view.frames = {stack.label};
      view.label = stack.label;
      view.kind = stack.kind;
      views.push_back(std::move(view));
    }
    SiteView& view = views[it->second];
    view.figures.add(stack.figures);
    for (const RankShare& share : stack.ranks) add_share(view.ranks, share.process, share.figures);
    view.stacks.push_back(std::move(stack));
  }
  for (SiteView& view : views) sort_shares(view.ranks);
  return views;
}

void sort_sites(std::vector<SiteView>& sites, const FrameTable& table, Metric metric) {
  std::sort(sites.begin(), sites.end(), [&](const SiteView& a, const SiteView& b) {
    const int64_t va = a.figures.value(metric);
    const int64_t vb = b.figures.value(metric);
    if (va != vb) return va > vb;
    if (a.frames != b.frames) return stack_less(table, a.frames, b.frames);
    return a.kind < b.kind;
  });
}

SiteFigures sum_figures(const std::vector<SiteView>& sites) {
  SiteFigures total;
  for (const SiteView& site : sites) total.add(site.figures);
  return total;
}

}  // namespace vramshim::analyzer
