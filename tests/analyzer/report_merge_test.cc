// Merging reports matches frames known only by function name (no line information: the binary was
// rebuilt or is gone) by where in the function they are and in which binary, as frames with line
// information are matched by file:line: a function's two allocations stay two sites.
#include "analyzer/model/report_merge.h"

#include <gtest/gtest.h>

#include <string>

#include "analyzer/model/report.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

// A process whose one site, `live_bytes` held, was allocated by two_sites() at `offset` of
// libtwo.so (of the build `build_id`).
Report process_of(uint64_t offset, const std::string& build_id, int64_t live_bytes) {
  Report report;
  report.modules.push_back({"/gone/libtwo.so", 0x7f0000000000, build_id});
  Frame frame;
  frame.module = 0;
  frame.offset = offset;
  frame.function = "_Z9two_sitesv";
  report.frames.push_back(frame);
  report.stacks.push_back({{0}});
  Site site;
  site.stack = 0;
  site.kind = "device";
  site.live_bytes = live_bytes;
  report.sites.push_back(site);
  return report;
}

// The module offset of the frame a merged site's stack holds.
uint64_t offset_of_site(const Report& merged, size_t site) {
  const Stack& stack = merged.stacks[static_cast<size_t>(merged.sites[site].stack)];
  return merged.frames[stack.frames.at(0)].offset;
}

TEST(ReportMerger, KeepsAFunctionsCallSitesApartWithoutLineInformation) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  merger.add(process_of(0x1130, "ab12", 9 << 20));
  merger.add(process_of(0x1150, "ab12", 1 << 20));
  merger.add(process_of(0x1130, "ab12", 9 << 20));
  const Report merged = merger.finish();
  ASSERT_EQ(merged.sites.size(), 2u);
  EXPECT_EQ(merged.frames.size(), 2u);
  EXPECT_EQ(merged.sites[0].live_bytes, 18 << 20);
  EXPECT_EQ(offset_of_site(merged, 0), 0x1130u);
  EXPECT_EQ(merged.sites[1].live_bytes, 1 << 20);
  EXPECT_EQ(offset_of_site(merged, 1), 0x1150u);
}

TEST(ReportMerger, MatchesFramesWithoutLineInformationOnlyInTheSameBinary) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  merger.add(process_of(0x1130, "ab12", 9 << 20));
  merger.add(process_of(0x1130, "cd34", 1 << 20));  // rebuilt: the same offset is other code
  const Report merged = merger.finish();
  ASSERT_EQ(merged.sites.size(), 2u);
  ASSERT_EQ(merged.frames.size(), 2u);
  EXPECT_NE(merged.frames[0].module, merged.frames[1].module);
}

// The shim samples the wall clock, which may step back: a process's samples out of time order
// are summed in time order, and no sum of the job's timeline drops below nothing.
TEST(ReportMerger, SumsEachProcesssSamplesInTimeOrder) {
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  Report stepped_back;
  stepped_back.timeline = {{10.0, 1000, 0}, {5.0, 0, 0}};
  Report other;
  other.timeline = {{7.0, 50, 0}};
  merger.add(stepped_back);
  merger.add(other);
  const Report merged = merger.finish();
  ASSERT_EQ(merged.timeline.size(), 3u);
  EXPECT_EQ(merged.timeline[0].time, 5.0);
  EXPECT_EQ(merged.timeline[0].in_use_bytes, 0);
  EXPECT_EQ(merged.timeline[1].in_use_bytes, 50);
  EXPECT_EQ(merged.timeline[2].time, 10.0);
  EXPECT_EQ(merged.timeline[2].in_use_bytes, 1050);
}

// A merged input's site with 400,000 shares, and inputs of 65,536 devices each, merge at once:
// each share and each device is found by a lookup, not by a search of those before it (a search
// took minutes here). The merger trusts the reader's checks: one merged_from entry stands for the
// 400,000 processes.
TEST(ReportMerger, FindsSharesAndDevicesByLookup) {
  constexpr int64_t kShares = 400000;
  Report ranks;
  ranks.merged_from.emplace_back();
  Site site;
  site.stack = -1;
  site.kind = "device";
  for (int64_t process = 0; process < kShares; ++process) {
    RankFigures share;
    share.process = process;
    share.live_bytes = 1;
    site.ranks.push_back(share);
  }
  site.ranks.push_back(site.ranks.back());  // a second share of the last process: summed
  ranks.sites.push_back(site);
  Report devices;
  devices.merged_from.emplace_back();
  for (int64_t device = 0; device < kMaxDeviceNumber; ++device) {
    DeviceFigures figures;
    figures.device = device;
    figures.in_use_bytes = 1;
    devices.devices.push_back(figures);
  }
  Symbolizer symbolizer(nullptr);
  ReportMerger merger(symbolizer);
  merger.add(ranks);
  for (int i = 0; i < 16; ++i) merger.add(devices);
  const Report merged = merger.finish();
  ASSERT_EQ(merged.sites.size(), 1u);
  ASSERT_EQ(merged.sites[0].ranks.size(), static_cast<size_t>(kShares));
  EXPECT_EQ(merged.sites[0].ranks.back().live_bytes, 2);
  ASSERT_EQ(merged.devices.size(), static_cast<size_t>(kMaxDeviceNumber));
  EXPECT_EQ(merged.devices.back().in_use_bytes, 16);
}

}  // namespace
}  // namespace vramshim::analyzer
