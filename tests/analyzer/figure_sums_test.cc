// Sums of report figures stop at the reader's bound (kFigureLimit) instead of overflowing: a merge
// of processes, a view of sites and the call tree each add up figures a file chose.
#include "analyzer/model/figure_sum.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/report_merge.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/report_writer.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/folded.h"

namespace vramshim::analyzer {
namespace {

// A process whose sites, each on a stack of the one Python frame, hold the most a report may say.
Report process_holding_the_most(size_t sites) {
  Report report;
  report.version = kReportVersion;
  report.process.pid = 7;
  Frame frame;
  frame.python = true;
  frame.file = "train.py";
  frame.line = 3;
  frame.function = "step";
  report.frames.push_back(frame);
  for (size_t i = 0; i < sites; ++i) {
    report.stacks.push_back({{0}});
    Site site;
    site.stack = static_cast<int64_t>(i);
    site.kind = "device";
#define VRAMSHIM_SITE_FIGURE(name, ...) site.name = kFigureLimit;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
    report.sites.push_back(site);
  }
  DeviceFigures device;
  device.in_use_bytes = kFigureLimit;
  device.peak_in_use_bytes = kFigureLimit;
  device.limit_bytes = kFigureLimit;
  report.devices.push_back(device);
  report.peak_in_use_bytes = kFigureLimit;
  report.timeline.push_back({1.0, kFigureLimit, kFigureLimit});
  return report;
}

void expect_most(const SiteFigures& figures) {
#define VRAMSHIM_SITE_FIGURE(name, ...) EXPECT_EQ(figures.name, kFigureLimit) << #name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
}

TEST(SaturatingAdd, StopsAtTheBoundEitherWay) {
  constexpr int64_t kMost = std::numeric_limits<int64_t>::max();
  constexpr int64_t kLeast = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(saturating_add(2, 3), 5);
  EXPECT_EQ(saturating_add(kFigureLimit, -kFigureLimit), 0);
  EXPECT_EQ(saturating_add(kFigureLimit, 1), kFigureLimit);
  EXPECT_EQ(saturating_add(kFigureLimit, kFigureLimit), kFigureLimit);
  EXPECT_EQ(saturating_add(-kFigureLimit, -kFigureLimit), -kFigureLimit);
  EXPECT_EQ(saturating_add(kMost, kMost), kFigureLimit);
  EXPECT_EQ(saturating_add(kLeast, kLeast), -kFigureLimit);
  EXPECT_EQ(bounded_figure(static_cast<__int128>(kMost) * 4), kFigureLimit);
}

TEST(FigureSums, AMergeOfTwoProcessesHoldingTheMostOnOneStackSaturates) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  merger.add(process_holding_the_most(1));
  merger.add(process_holding_the_most(1));
  const Report merged = merger.finish();
  ASSERT_EQ(merged.sites.size(), 1u);
  expect_most(figures_of(merged.sites[0]));
  ASSERT_EQ(merged.sites[0].ranks.size(), 2u);
  expect_most(figures_of(merged.sites[0].ranks[1]));
  EXPECT_EQ(merged.peak_in_use_bytes, kFigureLimit);
  ASSERT_EQ(merged.devices.size(), 1u);
  EXPECT_EQ(merged.devices[0].in_use_bytes, kFigureLimit);
  EXPECT_EQ(merged.devices[0].peak_in_use_bytes, kFigureLimit);
  EXPECT_EQ(merged.devices[0].limit_bytes, kFigureLimit);
  ASSERT_EQ(merged.timeline.size(), 1u);
  EXPECT_EQ(merged.timeline[0].in_use_bytes, kFigureLimit);
  EXPECT_EQ(merged.timeline[0].cached_bytes, kFigureLimit);

  // Written, the merged report reads back: its figures lie within the reader's bound.
  const char* directory = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(directory != nullptr ? directory : "/tmp") + "/merged.json";
  {
    std::ofstream out(path);
    write_report(out, merged);
  }
  const Report read = read_report(path);
  ASSERT_EQ(read.sites.size(), 1u);
  EXPECT_EQ(read.sites[0].live_bytes, kFigureLimit);
}

// Two stacks of one process that are one site in the merge (the same code at two addresses, say)
// give that process one share of it, their sum (FORMAT.md: one entry per process).
TEST(FigureSums, AMergedSiteHasOneShareForEachProcess) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  for (int process = 0; process < 2; ++process) {
    Report report = process_holding_the_most(2);
    for (Site& site : report.sites) site.live_bytes = 1024 * (site.stack + 1);
    merger.add(report);
  }
  const Report merged = merger.finish();
  ASSERT_EQ(merged.sites.size(), 1u);
  ASSERT_EQ(merged.sites[0].ranks.size(), 2u);
  for (const RankFigures& share : merged.sites[0].ranks) EXPECT_EQ(share.live_bytes, 3072);
  EXPECT_EQ(merged.sites[0].live_bytes, 6144);
}

TEST(FigureSums, AMergedTimelineStaysExactWhenProcessesLetGo) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  Report first = process_holding_the_most(1);
  first.timeline.push_back({3.0, 0, 0});
  Report second = process_holding_the_most(1);
  second.timeline[0].time = 2.0;
  second.timeline.push_back({4.0, 0, 0});
  merger.add(first);
  merger.add(second);
  const Report merged = merger.finish();
  ASSERT_EQ(merged.timeline.size(), 4u);
  const int64_t expected[] = {kFigureLimit, kFigureLimit, kFigureLimit, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(merged.timeline[i].in_use_bytes, expected[i]) << i;
}

TEST(FigureSums, ViewsAndTheCallTreeOfSitesHoldingTheMostSaturate) {
  const Report report = process_holding_the_most(3);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  // The three sites look the same: one view sums them.
  const std::vector<SiteView> by_stack = collect_sites(report, table);
  ASSERT_EQ(by_stack.size(), 1u);
  expect_most(by_stack[0].figures);
  const std::vector<SiteView> by_label = group_by_label(by_stack);
  ASSERT_EQ(by_label.size(), 1u);
  expect_most(by_label[0].figures);
  expect_most(sum_figures({by_stack[0], by_stack[0]}));

  std::vector<SiteView> distinct = by_stack;
  distinct.push_back(by_stack[0]);
  distinct[1].kind = "host";
  const CallTreeNode tree = build_call_tree(distinct, table, 0).root;
  EXPECT_EQ(tree.value(Metric::kLiveBytes), kFigureLimit);
  ASSERT_EQ(tree.children.size(), 1u);
  EXPECT_EQ(tree.children[0].value(Metric::kBytesAtPeak), kFigureLimit);

  // Folded stacks sum the sites of one stack the same way.
  std::ostringstream folded;
  render_folded(folded, distinct, table, Metric::kLiveBytes);
  const std::string text = folded.str();
  EXPECT_EQ(text.substr(text.rfind(' ') + 1), std::to_string(kFigureLimit) + "\n") << text;
}

}  // namespace
}  // namespace vramshim::analyzer
