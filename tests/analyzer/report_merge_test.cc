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

}  // namespace
}  // namespace vramshim::analyzer
