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
  tracker.on_alloc_with_frames(key, bytes, attribution::AllocationKind::kDevice, 0, 0, frames,
                               depth);
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

// An out-of-memory report as the shim writes it (reason "oom", shim/report) reads back into the
// analyzer's model with every figure of the moment, the other processes and the pool's picture.
TEST(ShimReport, AnOutOfMemoryReportReadsBackWhole) {
  attribution::TrackerOptions options;
  options.own_module = {};
  attribution::Tracker tracker(options);
  allocate_in_named_function(tracker, 0x1000, 96 << 20);
  const attribution::Tracker::LiveLeaders leaders = tracker.live_leaders(5);
  ASSERT_EQ(leaders.sites.size(), 1u);

  oom::OutOfMemoryFacts facts;
  facts.request = {64 << 20, attribution::AllocationKind::kDevice, 1,
                   pool::OutOfMemoryCause::kDriver, "cuMemAlloc"};
  facts.time = 1700000000.5;
  facts.failures = 3;
  facts.device_total_bytes = uint64_t{1} << 30;
  facts.device_free_bytes = 8 << 20;
  facts.in_use_bytes = 96 << 20;
  facts.cached_bytes = 32 << 20;
  facts.reserved_bytes = 128 << 20;
  facts.direct_bytes = 4 << 20;
  facts.pool_free_bytes = 32 << 20;
  facts.pool_largest_free_block = 30 << 20;
  facts.segments.push_back({0x7f0000000000,
                            128 << 20,
                            {{96 << 20, 30 << 20, pool::BlockState::kFree},
                             {(126 << 20), 2 << 20, pool::BlockState::kPending}}});
  facts.failing_stack = leaders.sites[0].stack;
  facts.leading_sites.push_back(
      {leaders.sites[0].stack, attribution::AllocationKind::kDevice, 96 << 20, 1});
  facts.other_processes.push_back(
      {41, "python train.py", "vramshim", 600 << 20, 100 << 20, 720 << 20});
  facts.other_processes.push_back({42, "", "nvml", std::nullopt, std::nullopt, std::nullopt});
  facts.unasked.push_back("pid 43 (/run/user/0/vramshim/43.sock) did not answer within 100 ms");

  report::ReportInputs inputs;
  inputs.reason = "oom";
  inputs.process = report::read_process_info(std::nullopt);
  inputs.tracker = &tracker;
  inputs.out_of_memory = &facts;
  const std::string path = temp_path("shim_oom_report.json");
  ASSERT_EQ(report::write_report(path, inputs), "");

  const Report report = read_report(path);
  ASSERT_TRUE(report.oom.has_value());
  const OutOfMemory& oom = *report.oom;
  EXPECT_EQ(oom.request.bytes, 64 << 20);
  EXPECT_EQ(oom.request.kind, "device");
  EXPECT_EQ(oom.request.device, 1);
  EXPECT_EQ(oom.request.call, "cuMemAlloc");
  EXPECT_EQ(oom.request.cause, "driver");
  EXPECT_DOUBLE_EQ(oom.time, 1700000000.5);
  EXPECT_EQ(oom.failures, 3);
  // 1 GiB total, 8 MiB free, 128 MiB reserved and 4 MiB direct here: 884 MiB used elsewhere.
  EXPECT_EQ(oom.verdict, "held_elsewhere");
  EXPECT_EQ(oom.held_elsewhere_bytes, int64_t{884} << 20);
  EXPECT_EQ(oom.device_total_bytes, int64_t{1} << 30);
  EXPECT_EQ(oom.device_free_bytes, 8 << 20);
  EXPECT_EQ(oom.in_use_bytes, 96 << 20);
  EXPECT_EQ(oom.cached_bytes, 32 << 20);
  EXPECT_EQ(oom.reserved_bytes, 128 << 20);
  EXPECT_EQ(oom.direct_bytes, 4 << 20);
  EXPECT_FALSE(oom.limit_bytes.has_value());
  EXPECT_EQ(oom.pool_free_bytes, 32 << 20);
  EXPECT_EQ(oom.pool_largest_free_block, 30 << 20);
  ASSERT_EQ(oom.segments.size(), 1u);
  EXPECT_EQ(oom.segments[0].base, 0x7f0000000000u);
  ASSERT_EQ(oom.segments[0].blocks.size(), 2u);
  EXPECT_EQ(oom.segments[0].blocks[0].offset, 96 << 20);
  EXPECT_FALSE(oom.segments[0].blocks[0].pending);
  EXPECT_TRUE(oom.segments[0].blocks[1].pending);
  ASSERT_EQ(oom.leading_sites.size(), 1u);
  EXPECT_EQ(oom.leading_sites[0].live_bytes, 96 << 20);
  ASSERT_GE(oom.request.stack, 0);
  EXPECT_EQ(oom.leading_sites[0].stack, oom.request.stack);
  ASSERT_EQ(oom.other_processes.size(), 2u);
  EXPECT_EQ(oom.other_processes[0].pid, 41);
  EXPECT_EQ(oom.other_processes[0].command, "python train.py");
  EXPECT_EQ(oom.other_processes[0].source, "vramshim");
  EXPECT_EQ(oom.other_processes[0].in_use_bytes, 600 << 20);
  EXPECT_EQ(oom.other_processes[0].cached_bytes, 100 << 20);
  EXPECT_EQ(oom.other_processes[0].used_bytes, 720 << 20);
  EXPECT_EQ(oom.other_processes[1].source, "nvml");
  EXPECT_FALSE(oom.other_processes[1].in_use_bytes.has_value());
  EXPECT_FALSE(oom.other_processes[1].used_bytes.has_value());
  EXPECT_EQ(oom.unasked, facts.unasked);
  // The failing call's stack names the allocating function, as the site does.
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const std::vector<SiteView> sites = collect_sites(report, table);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(table.frame(sites[0].frames[0])
                .function.rfind("vramshim::analyzer::allocate_in_named_function", 0),
            0u);
}

}  // namespace
}  // namespace vramshim::analyzer
