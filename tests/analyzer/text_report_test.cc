// The report's text and JSON header and ranking read right at their edges.
#include "analyzer/render/text_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/view_json.h"

namespace vramshim::analyzer {
namespace {

Report one_site_report(int64_t allocations) {
  Report report;
  report.process.pid = 1;
  report.process.start_time = 1000.0;
  report.process.report_time = 1002.0;
  Frame frame;
  frame.python = true;
  frame.file = "train.py";
  frame.line = 7;
  frame.function = "step";
  report.frames.push_back(frame);
  report.stacks.push_back(Stack{{0}});
  Site site;
  site.stack = 0;
  site.kind = "device";
  site.live_bytes = site.total_bytes = site.peak_bytes = site.bytes_at_peak = 4096 * allocations;
  site.live_count = site.total_count = allocations;
  report.sites.push_back(site);
  return report;
}

std::string top_sites_by_allocations(const Report& report) {
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{});
  const std::vector<SiteView> sites = collect_sites(report, table);
  std::ostringstream out;
  render_top_sites(out, report, table, sites, Metric::kAllocations, 0);
  return out.str();
}

TEST(TextReport, ASiteOfOneAllocationIsRankedAsOneAllocation) {
  EXPECT_NE(top_sites_by_allocations(one_site_report(1)).find("#1  1 allocation  [device]"),
            std::string::npos)
      << top_sites_by_allocations(one_site_report(1));
  EXPECT_NE(top_sites_by_allocations(one_site_report(2)).find("#1  2 allocations  [device]"),
            std::string::npos);
}

// A site without a stack says why as its report can have none: in an imported PyTorch snapshot,
// what was allocated before PyTorch recorded its history (a model loaded first).
TEST(TextReport, ASiteWithoutAStackSaysWhyForTheReportItIsIn) {
  Report report = one_site_report(1);
  report.sites[0].stack = -1;
  EXPECT_NE(top_sites_by_allocations(report).find(
                "[no stack: recorded with stacks off, or every frame hidden]"),
            std::string::npos);
  report.reason = "import";
  EXPECT_NE(top_sites_by_allocations(report).find(
                "[no stack: allocated before PyTorch recorded its history, or recorded without "
                "stacks]"),
            std::string::npos)
      << top_sites_by_allocations(report);
}

// The start is read to 10 ms and the peak's time from a coarse clock: a peak in the first
// milliseconds may read before the start. It is 0 s after it, not "-0.0 s".
TEST(TextReport, APeakReadBeforeTheStartIsAtTheStart) {
  Report report = one_site_report(1);
  report.peak_time = report.process.start_time - 0.0003;
  report.peak_in_use_bytes = 4096;
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{});
  const std::vector<SiteView> sites = collect_sites(report, table);
  std::ostringstream out;
  render_header(out, report, sites);
  EXPECT_EQ(out.str().find("-0"), std::string::npos) << out.str();
  nlohmann::json document;
  add_report_header(document, report, sites);
  EXPECT_EQ(document["peak_seconds_after_start"], 0.0);
}

}  // namespace
}  // namespace vramshim::analyzer
