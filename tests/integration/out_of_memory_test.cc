// Out of memory, explained: when the shim returns CUDA_ERROR_OUT_OF_MEMORY it prints one block on
// stderr (request, device, this process, verdict, the sites holding the most, the failing call, the
// report) and writes an "oom" report beside the exit report; storms print a bounded number of
// blocks and write one report; a program that retries goes on.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

namespace fs = std::filesystem;

std::string program() { return runfile("tests/integration/programs/out_of_memory"); }

struct Scenario {
  ProgramRun run;
  std::string report;  // the exit report's path; the oom report is beside it
};

Scenario run_scenario(const std::string& mode, std::map<std::string, std::string> env = {}) {
  const std::string directory = short_temp_dir();
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", directory + "/mem.json"},
                 {"VRAMSHIM_SOCKET", "off"},
                 {"FAKECUDA_CAPACITY", "1GiB"}};
  for (auto& [key, value] : env) options.env[key] = value;
  return {run_program({program(), mode}, options), directory + "/mem.json"};
}

// The lines of the out-of-memory blocks on stderr.
int blocks(const std::string& err) {
  int count = 0;
  for (size_t at = 0; (at = err.find("vramshim: out of memory: ", at)) != std::string::npos; ++at) {
    ++count;
  }
  return count;
}

std::string line_after(const std::string& err, const std::string& marker) {
  const size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  const size_t end = err.find('\n', at);
  return err.substr(at, end - at);
}

// The site lines under "the sites holding the most:".
std::vector<std::string> leading_site_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err.substr(err.find("the sites holding the most:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("vramshim:     ", 0) == 0) lines.push_back(line);
  return lines;
}

void expect_oom_report(const Scenario& s, const char* verdict, const char* kind) {
  const std::string oom_path = s.report.substr(0, s.report.size() - 5) + ".oom.json";
  ASSERT_TRUE(fs::exists(oom_path)) << s.run.err;
  const nlohmann::json report = read_report(oom_path);
  EXPECT_EQ(report["reason"], "oom");
  const nlohmann::json& oom = report["oom"];
  EXPECT_EQ(oom["verdict"], verdict) << oom.dump();
  EXPECT_EQ(oom["request"]["kind"], kind);
  EXPECT_GE(oom["request"]["stack"].get<int64_t>(), 0);
  EXPECT_EQ(oom["device_total_bytes"], uint64_t{1} << 30);
  EXPECT_FALSE(oom["leading_sites"].empty());
  EXPECT_NE(s.run.err.find("vramshim:   report: " + oom_path), std::string::npos) << s.run.err;
  // The exit report is still written, and is a report of its own.
  EXPECT_EQ(read_report(s.report)["reason"], "exit");
}

TEST(OutOfMemory, ExhaustionByOneSiteNamesItAndWritesTheReport) {
  const Scenario s = run_scenario("exhaustion");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim: out of memory: cuMemAlloc of 64.0 MiB (device memory) on "
                           "device 0 failed"),
            std::string::npos)
      << s.run.err;
  EXPECT_NE(line_after(s.run.err, "verdict: ").find("exhaustion by this process"),
            std::string::npos)
      << s.run.err;
  const std::vector<std::string> sites = leading_site_lines(s.run.err);
  ASSERT_FALSE(sites.empty()) << s.run.err;
  EXPECT_NE(sites[0].find("1.0 GiB in 16 allocations  hold_everything"), std::string::npos)
      << sites[0];
  EXPECT_NE(s.run.err.find("the failing call:\nvramshim:     hold_everything"), std::string::npos)
      << s.run.err;
  expect_oom_report(s, "exhaustion", "device");
}

TEST(OutOfMemory, FragmentationIsToldFromExhaustion) {
  const Scenario s = run_scenario("fragmentation");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(line_after(s.run.err, "verdict: "),
            "verdict: fragmentation: the pool holds 512.0 MiB free, but no free block of 1.5 MiB "
            "(the largest is 1.0 MiB)")
      << s.run.err;
  EXPECT_NE(leading_site_lines(s.run.err)[0].find("fill_with_small_blocks"), std::string::npos);
  expect_oom_report(s, "fragmentation", "device");
  // The fragmentation picture: every segment with its free blocks.
  const nlohmann::json oom =
      read_report(s.report.substr(0, s.report.size() - 5) + ".oom.json")["oom"];
  uint64_t free_bytes = 0;
  for (const nlohmann::json& segment : oom["segments"]) {
    for (const nlohmann::json& block : segment["blocks"]) {
      if (block[2] == "free") free_bytes += block[1].get<uint64_t>();
    }
  }
  EXPECT_EQ(free_bytes, 512u << 20);
  EXPECT_EQ(oom["pool_largest_free_block"], 1u << 20);
}

TEST(OutOfMemory, TheLimitRefusingIsSaidSo) {
  const Scenario s = run_scenario("limit", {{"VRAMSHIM_LIMIT", "300MiB"}});
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_EQ(line_after(s.run.err, "verdict: "),
            "verdict: limit: VRAMSHIM_LIMIT is 300.0 MiB and this process has 256.0 MiB in use")
      << s.run.err;
  expect_oom_report(s, "limit", "device");
}

TEST(OutOfMemory, AStreamOrderedRefusalIsExplainedToo) {
  const Scenario s = run_scenario("async");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.err.find("cuMemAllocAsync of 64.0 MiB (stream-ordered memory)"),
            std::string::npos)
      << s.run.err;
  EXPECT_NE(s.run.err.find("1.0 GiB served by the driver directly"), std::string::npos);
  EXPECT_NE(leading_site_lines(s.run.err)[0].find("hold_stream_ordered"), std::string::npos);
  expect_oom_report(s, "exhaustion", "async");
}

TEST(OutOfMemory, AProgramThatFreesAndRetriesGoesOnAfterOneBlock) {
  const Scenario s = run_scenario("retry");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.out.find("done"), std::string::npos);
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
}

TEST(OutOfMemory, AStormOfFailuresFromFourThreadsPrintsOneBlockAndOneReport) {
  const Scenario s = run_scenario("storm");
  ASSERT_EQ(s.run.exit_code, 0) << s.run.err;
  EXPECT_NE(s.run.out.find("failures=10001"), std::string::npos) << s.run.out;
  EXPECT_EQ(blocks(s.run.err), 1) << s.run.err;
  EXPECT_NE(s.run.err.find("vramshim: 10000 more out-of-memory failures after the last "
                           "explanation"),
            std::string::npos)
      << s.run.err;
  int oom_reports = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(s.report).parent_path())) {
    if (entry.path().string().find(".oom") != std::string::npos) ++oom_reports;
  }
  EXPECT_EQ(oom_reports, 1);
}

}  // namespace
}  // namespace vramshim::testing
