// The shim's own report writer (shim/report) read back by the analyzer: the two halves agree on
// FORMAT.md, including what a frame's offset means, so the analyzer names the allocating function.
#include <execinfo.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "shim/attribution/tracker.h"
#include "shim/report/report_writer.h"

namespace vramshim::analyzer {

// Not in an anonymous namespace: its symbol-table name is what the test expects to read back.
__attribute__((noinline)) void allocate_in_named_function(attribution::Tracker& tracker,
                                                          uint64_t key, uint64_t bytes) {
  void* addresses[32];
  const int depth = backtrace(addresses, 32);
  uint64_t frames[32];
  for (int i = 0; i < depth; ++i) frames[i] = reinterpret_cast<uintptr_t>(addresses[i]);
  tracker.on_alloc_with_frames(key, bytes, bytes, attribution::AllocationKind::kDevice, 0, 0,
                               frames, depth);
}

namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(ShimReport, AnalyzerNamesTheAllocatingFunction) {
  attribution::TrackerOptions options;
  options.own_module = {};  // the stacks given are complete
  attribution::Tracker tracker(options);
  for (uint64_t key : {0x1000, 0x2000})
    allocate_in_named_function(tracker, key, 3 << 20);  // one site
  tracker.on_free(0x2000);

  report::ReportInputs inputs;
  inputs.reason = "cli";
  inputs.process = report::read_process_info(std::string("5"));
  inputs.tracker = &tracker;
  const std::string path = temp_path("shim_report.json");
  ASSERT_EQ(report::write_report(path, inputs), "");

  const Report report = read_report(path);
  EXPECT_EQ(report.process.rank, 5);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const std::vector<SiteView> sites = collect_sites(report, table);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].figures.live_bytes, 3 << 20);
  EXPECT_EQ(sites[0].figures.total_count, 2);
  ASSERT_FALSE(sites[0].frames.empty());
  const DisplayFrame& innermost = table.frame(sites[0].frames[0]);
  EXPECT_EQ(innermost.function,
            "vramshim::analyzer::allocate_in_named_function(vramshim::attribution::Tracker&, "
            "unsigned long, unsigned long)");
  // Its caller is this test's body, also named from the symbol table.
  ASSERT_GE(sites[0].frames.size(), 2u);
  EXPECT_NE(table.frame(sites[0].frames[1]).function.find("AnalyzerNamesTheAllocatingFunction"),
            std::string::npos)
      << table.frame(sites[0].frames[1]).name();
  EXPECT_TRUE(symbolizer.warnings().empty()) << symbolizer.warnings().front();
}

}  // namespace
}  // namespace vramshim::analyzer
