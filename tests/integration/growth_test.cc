// Memory over time, end to end against the simulated driver: a loop that leaks 1 MiB per step
// among churning sites, a warm-up that levels off and a bounded cache; `vramshim report --growth`
// puts the leak first at 1 MiB per step and names the step, and calls nothing else growing; `run`
// says so in its summary; the report's history ends at the sites' live bytes and its trace is
// consistent; the same leak made from Python names the Python line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

constexpr double kMiB = 1 << 20;

std::string cli() { return runfile("analyzer/vramshim"); }

RunOptions plain() {
  RunOptions options;
  options.preload_shim = false;
  options.fake_driver = false;
  return options;
}

// Each "#N" entry of `--growth` output: its first line and the lines of its stack.
struct GrowthEntry {
  std::string header;
  std::string stack;
};

std::vector<GrowthEntry> growth_entries(const std::string& text) {
  std::vector<GrowthEntry> entries;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind('#', 0) == 0) {
      entries.push_back({line, ""});
    } else if (!entries.empty() && line.rfind("    ", 0) == 0) {
      entries.back().stack += line + "\n";
    }
  }
  return entries;
}

double mib_per_step(const std::string& header) {
  std::smatch match;
  if (!std::regex_search(header, match, std::regex(R"(([0-9.]+) (KiB|MiB) per step)"))) return 0;
  return std::stod(match[1]) * (match[2] == "KiB" ? 1.0 / 1024 : 1.0);
}

TEST(GrowthTest, TheLeakIsFirstAtOneMiBPerStepAndNothingElseGrows) {
  const std::string path = short_temp_dir() + "/report.json";
  const ProgramRun run =
      run_program({runfile("tests/integration/programs/growing_sites"), "200"}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ProgramRun growth = run_program({cli(), "report", path, "--growth"}, plain());
  ASSERT_EQ(growth.exit_code, 0) << growth.err;
  const std::string& text = growth.out;
  // The period is named: seven allocations make a step of a little over 20 ms.
  std::smatch period;
  ASSERT_TRUE(std::regex_search(text, period,
                                std::regex(R"(a step every ([0-9.]+) ms, 7 allocations per step)")))
      << text;
  EXPECT_GE(std::stod(period[1]), 20.0) << text;
  EXPECT_LE(std::stod(period[1]), 40.0) << text;

  const std::vector<GrowthEntry> entries = growth_entries(text);
  ASSERT_EQ(entries.size(), 1u) << text;
  EXPECT_NE(entries[0].stack.find("leak_one_mib_per_step"), std::string::npos) << text;
  EXPECT_NEAR(mib_per_step(entries[0].header), 1.0, 0.05) << text;
  // Gained since the history's first tick, a few steps in.
  std::smatch gained;
  ASSERT_TRUE(std::regex_search(entries[0].header, gained, std::regex(R"(\+([0-9.]+) MiB since)")));
  EXPECT_GE(std::stod(gained[1]), 180.0) << text;
  EXPECT_LE(std::stod(gained[1]), 200.0) << text;
  for (const char* not_growing : {"warm_up_buffers", "cache_entry", "churn_"}) {
    EXPECT_EQ(text.find(not_growing), std::string::npos) << not_growing << "\n" << text;
  }
  // The default summary of `report` has the growing section too.
  const ProgramRun summary = run_program({cli(), "report", path}, plain());
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("growing:"), std::string::npos) << summary.out;
}

TEST(GrowthTest, TheReportsHistoryEndsAtEachSitesLiveBytesAndItsTraceIsConsistent) {
  const std::string path = short_temp_dir() + "/report.json";
  const ProgramRun run =
      run_program({runfile("tests/integration/programs/growing_sites"), "60"}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = read_report(path);
  EXPECT_EQ(report.at("version"), 2);
  const nlohmann::json& sites = report.at("sites");
  const nlohmann::json& history = report.at("history");
  ASSERT_GT(history.at("ticks").get<int>(), 5);
  for (const auto& series : history.at("sites")) {
    const nlohmann::json& site = sites.at(series.at("site").get<size_t>());
    EXPECT_EQ(series.at("points").back().at(1), site.at("live_bytes")) << series.dump();
  }
  // Every free in the trace follows its allocation, or its allocation came before the window.
  const nlohmann::json& trace = report.at("trace");
  EXPECT_EQ(trace.at("capacity"), 262144);
  std::map<uint64_t, std::string> last_event;
  size_t allocations = 0;
  for (const auto& event : trace.at("events")) {
    const std::string type = event.at(1);
    if (type != "alloc" && type != "free") continue;
    std::string& previous = last_event[event.at(2).get<uint64_t>()];
    EXPECT_NE(previous, type) << event.dump();
    previous = type;
    allocations += type == "alloc";
  }
  EXPECT_EQ(allocations, 60u * 7 + 20);
  // And the pool's segments: their blocks tile them, and each allocated block names its stack.
  uint64_t allocated_bytes = 0;
  for (const auto& segment : report.at("segments")) {
    uint64_t offset = 0;
    for (const auto& block : segment.at("blocks")) {
      EXPECT_EQ(block.at(0).get<uint64_t>(), offset) << segment.dump();
      offset += block.at(1).get<uint64_t>();
      if (block.at(2) == "allocated") {
        allocated_bytes += block.at(3).get<uint64_t>();
        EXPECT_GE(block.at(4).get<int>(), 0) << segment.dump();
      } else {
        EXPECT_EQ(block.at(4).get<int>(), -1) << segment.dump();
      }
    }
    EXPECT_EQ(offset, segment.at("size").get<uint64_t>()) << segment.dump();
  }
  EXPECT_EQ(allocated_bytes, (60 + 20 * 2 + 16) * static_cast<uint64_t>(kMiB));
}

TEST(GrowthTest, RunSaysWhatGrowsWhenTheProgramEnds) {
  const std::string directory = short_temp_dir();
  RunOptions options;
  options.preload_shim = false;  // `run` preloads it
  options.env = {{"VRAMSHIM_SOCKET", "off"}};
  const ProgramRun run = run_program({cli(), "run", "--report", directory + "/run.%p.json", "--",
                                      runfile("tests/integration/programs/growing_sites"), "100"},
                                     options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::smatch growing;
  ASSERT_TRUE(std::regex_search(
      run.err, growing,
      std::regex(R"(growing:\n\s+\+[0-9.]+ MiB\s+([0-9.]+) MiB/step\s+leak_one_mib_per_step)")))
      << run.err;
  EXPECT_NEAR(std::stod(growing[1]), 1.0, 0.05) << run.err;
}

TEST(GrowthTest, ALeakMadeFromPythonNamesItsLine) {
  const std::string app = runfile("tests/integration/python/growing_app.py");
  int leak_line = -1;
  {
    std::ifstream in(app);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.find("# line: leak") != std::string::npos) leak_line = number;
    }
  }
  const std::string path = short_temp_dir() + "/report.json";
  const ProgramRun run = run_program({"/usr/bin/python3", app, "100"}, reporting_to(path));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ProgramRun growth = run_program({cli(), "report", path, "--growth"}, plain());
  ASSERT_EQ(growth.exit_code, 0) << growth.err;
  const std::vector<GrowthEntry> entries = growth_entries(growth.out);
  ASSERT_EQ(entries.size(), 1u) << growth.out;
  EXPECT_NE(entries[0].stack.find("growing_app.py:" + std::to_string(leak_line)), std::string::npos)
      << growth.out;
  EXPECT_NEAR(mib_per_step(entries[0].header), 1.0, 0.05) << growth.out;
}

}  // namespace
}  // namespace vramshim::testing
