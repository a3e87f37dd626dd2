// VRAMSHIM_STACK_TABLE through the hooks against the simulated driver: past the budget, new stacks
// share one site that the report and `vramshim report` name for the budget, every allocation still
// counted; a stack interned before is still found; one warning line.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

constexpr uint64_t kCallers = 2000;  // distinct_stacks.cc

TEST(StackTableBudget, NewStacksPastItShareOneSiteAndAreCounted) {
  const std::string dir = short_temp_dir();
  const std::string path = dir + "/report.json";
  RunOptions options = reporting_to(path);
  options.env["VRAMSHIM_STACK_TABLE"] = "64KiB";
  const ProgramRun run = run_program({program("distinct_stacks")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string warning = "reached VRAMSHIM_STACK_TABLE";
  const size_t first = run.err.find(warning);
  EXPECT_NE(first, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(warning, first + 1), std::string::npos) << "one warning: " << run.err;

  const nlohmann::json report = read_report(path);
  const nlohmann::json& config = report.at("config");
  EXPECT_EQ(config.at("stack_table_bytes"), 64u << 10);
  const uint64_t past = config.at("allocations_past_stack_table").get<uint64_t>();
  EXPECT_GT(past, 0u);
  EXPECT_LT(past, kCallers);

  const std::vector<nlohmann::json> overflow =
      sites_with_function(report, "stacks past VRAMSHIM_STACK_TABLE");
  ASSERT_EQ(overflow.size(), 1u);
  EXPECT_EQ(stack_frames(report, overflow[0]).size(), 1u);
  EXPECT_EQ(overflow[0].at("live_count"), past);
  EXPECT_EQ(overflow[0].at("live_bytes"), past * 4096);
  uint64_t live = 0;
  for (const nlohmann::json& site : report.at("sites"))
    live += site.at("live_count").get<uint64_t>();
  EXPECT_EQ(live, kCallers + 2);  // every allocation counted, the overflow's included

  // first_stack's stack was interned before the budget was reached: found again past it.
  const std::vector<nlohmann::json> known = sites_with_function(report, "_Z11first_stackv");
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0].at("live_count"), 2u);

  RunOptions cli_options;
  cli_options.preload_shim = false;
  const ProgramRun shown = run_program({runfile("analyzer/vramshim"), "report", path}, cli_options);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find(std::to_string(past) +
                           " allocations from stacks past VRAMSHIM_STACK_TABLE (64.0 KiB)"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("stacks past VRAMSHIM_STACK_TABLE"), std::string::npos);
}

}  // namespace
}  // namespace vramshim::testing
