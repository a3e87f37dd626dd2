// The written report parses, holds every field of the contract (FORMAT.md), and its frames, stacks
// and sites name the application functions that allocated.
#include "shim/report/report_writer.h"

#include "shim/report/report_pattern.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>

#include "tests/unit/attribution/allocation_scenarios.h"
#include "tests/unit/report/report_test_support.h"

namespace vramshim::report {
namespace {

using attribution::AllocationKind;
using attribution::Tracker;
using attribution::TrackerOptions;
using nlohmann::json;

constexpr uint64_t kMiB = uint64_t{1} << 20;

Tracker* current_tracker = nullptr;
void hook_allocate(uint64_t key, uint64_t size) {
  current_tracker->on_alloc(key, size, AllocationKind::kDevice, 0, 0);
}
void hook_release(uint64_t key) { current_tracker->on_free(key); }
const ScenarioHooks kHooks{hook_allocate, hook_release};

class ReportWriter : public ::testing::Test {
 protected:
  ReportWriter() : tracker_(options()), timeline_(100, 16) {
    current_tracker = &tracker_;
    leak_three_blocks(&kHooks, 0x10000);
    churn(&kHooks, 0x20000);
    peak_then_free(&kHooks, 0x30000);
    tracker_.on_alloc(0x40000, 512, AllocationKind::kAsync, 1, 0x55);
    timeline_.add_sample(1000.5, 3 * kMiB, 7 * kMiB);
    timeline_.add_sample(1000.6, 4 * kMiB, 6 * kMiB);

    inputs_.reason = "signal";
    inputs_.sequence = 4;
    inputs_.process = read_process_info(std::string("3"));
    inputs_.config.stacks = attribution::StackMode::kAll;
    inputs_.config.limit_bytes = 8 * kMiB;
    inputs_.devices.push_back(DeviceFigures{0, {{"in_use_bytes", 3 * kMiB}, {"limit_bytes", {}}}});
    inputs_.devices.push_back(DeviceFigures{1, {{"in_use_bytes", 512}, {"limit_bytes", 99}}});
    inputs_.tracker = &tracker_;
    inputs_.timeline = &timeline_;
  }

  static TrackerOptions options() {
    TrackerOptions options;
    options.own_module = attribution::ModuleRange::of_this_module();
    return options;
  }

  json write_and_read() {
    const std::string path = make_test_directory() + "/report.json";
    const std::string error = write_report(path, inputs_);
    EXPECT_EQ(error, "");
    return read_json(path);
  }

  Tracker tracker_;
  attribution::TimelineBuffer timeline_;
  ReportInputs inputs_;
};

TEST_F(ReportWriter, HasEveryContractField) {
  const json report = write_and_read();
  EXPECT_EQ(report.at("format"), "vramshim-report");
  EXPECT_EQ(report.at("version"), 2);
  EXPECT_EQ(report.at("reason"), "signal");
  EXPECT_EQ(report.at("sequence"), 4);

  const json& process = report.at("process");
  EXPECT_EQ(process.at("pid"), getpid());
  EXPECT_TRUE(process.at("cmdline").is_array());
  EXPECT_FALSE(process.at("cmdline").empty());
  EXPECT_TRUE(process.at("exe").is_string());
  EXPECT_TRUE(process.at("host").is_string());
  EXPECT_EQ(process.at("rank"), 3);
  EXPECT_GT(process.at("start_time").get<double>(), 1.0e9);
  EXPECT_GE(process.at("report_time").get<double>(), process.at("start_time").get<double>());

  const json& config = report.at("config");
  EXPECT_EQ(config.at("pool"), true);
  EXPECT_EQ(config.at("stacks"), "all");
  EXPECT_EQ(config.at("sample_bytes"), 0);
  EXPECT_EQ(config.at("stack_depth"), 64);
  EXPECT_EQ(config.at("limit_bytes"), 8 * kMiB);
  EXPECT_TRUE(config.at("max_cached_bytes").is_null());

  const json& devices = report.at("devices");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].at("device"), 0);
  EXPECT_EQ(devices[0].at("in_use_bytes"), 3 * kMiB);
  EXPECT_TRUE(devices[0].at("limit_bytes").is_null());
  EXPECT_EQ(devices[1].at("limit_bytes"), 99);

  // Peaks are per device: device 0's 259 MiB and the 512 B device 1 holds.
  EXPECT_EQ(report.at("peak").at("in_use_bytes"), 259 * kMiB + 512);
  EXPECT_GT(report.at("peak").at("time").get<double>(), 1.0e9);

  for (const char* section : {"modules", "frames", "stacks", "sites"}) {
    ASSERT_TRUE(report.at(section).is_array()) << section;
    ASSERT_FALSE(report.at(section).empty()) << section;
    for (size_t i = 0; i < report.at(section).size(); ++i) {
      if (std::string(section) != "sites") {
        EXPECT_EQ(report.at(section)[i].at("id"), i);
      }
    }
  }
  for (const json& module : report.at("modules")) {
    EXPECT_TRUE(module.at("path").is_string());
    EXPECT_TRUE(module.at("base").is_number_unsigned());
    EXPECT_TRUE(module.at("build_id").is_string());
  }
  for (const json& site : report.at("sites")) {
    for (const char* field : {"stack", "live_bytes", "live_count", "total_bytes", "total_count",
                              "peak_bytes", "bytes_at_peak"}) {
      EXPECT_TRUE(site.at(field).is_number_integer()) << field;
    }
    const std::set<std::string> kinds = {"device", "pitched", "async", "managed", "host", "vmm"};
    EXPECT_EQ(kinds.count(site.at("kind").get<std::string>()), 1u);
  }

  const json& timeline = report.at("timeline");
  EXPECT_EQ(timeline.at("interval_ms"), 100);
  ASSERT_EQ(timeline.at("samples").size(), 2u);
  EXPECT_DOUBLE_EQ(timeline.at("samples")[1][0].get<double>(), 1000.6);
  EXPECT_EQ(timeline.at("samples")[1][1], 4 * kMiB);
  EXPECT_EQ(timeline.at("samples")[1][2], 6 * kMiB);
}

// The timeline ends at the report's figures: its samples are the control thread's every 100 ms at
// most, each the largest of its slot, so a page's timeline ended 10 MiB above the report's figures
// (or had none for a run of under 100 ms).
TEST_F(ReportWriter, TheTimelineEndsAtTheReportsFigures) {
  inputs_.timeline_end = attribution::TimelineSample{1000.75, 2 * kMiB, 8 * kMiB};
  const json report = write_and_read();
  const json& samples = report.at("timeline").at("samples");
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_DOUBLE_EQ(samples[2][0].get<double>(), 1000.75);
  EXPECT_EQ(samples[2][1], 2 * kMiB);
  EXPECT_EQ(samples[2][2], 8 * kMiB);
}

// Sums the sites whose stack's innermost frame the report names `function`.
json figures_of(const json& report, const std::string& function) {
  json sum = {{"live_bytes", 0},  {"live_count", 0},    {"total_bytes", 0},
              {"total_count", 0}, {"bytes_at_peak", 0}, {"sites", 0}};
  for (const json& site : report.at("sites")) {
    if (site.at("stack").get<int>() < 0) continue;
    const json& stack = report.at("stacks").at(site.at("stack").get<size_t>());
    const json& innermost = report.at("frames").at(stack.at("frames").at(0).get<size_t>());
    if (innermost.at("function") != function) continue;
    for (const char* field :
         {"live_bytes", "live_count", "total_bytes", "total_count", "bytes_at_peak"}) {
      sum[field] = sum[field].get<uint64_t>() + site.at(field).get<uint64_t>();
    }
    sum["sites"] = sum["sites"].get<int>() + 1;
  }
  return sum;
}

TEST_F(ReportWriter, SitesNameTheAllocatingFunctionsWithExactFigures) {
  const json report = write_and_read();
  const json leak = figures_of(report, "leak_three_blocks");
  EXPECT_GE(leak["sites"], 1);
  EXPECT_EQ(leak["live_bytes"], 3 * kMiB);
  EXPECT_EQ(leak["live_count"], 3);
  EXPECT_EQ(leak["total_count"], 3);
  EXPECT_EQ(leak["bytes_at_peak"], 3 * kMiB);
  const json churned = figures_of(report, "churn");
  EXPECT_EQ(churned["live_bytes"], 0);
  EXPECT_EQ(churned["total_bytes"], 10000 * 4096);
  EXPECT_EQ(churned["total_count"], 10000);
  const json peak = figures_of(report, "peak_then_free");
  EXPECT_EQ(peak["live_bytes"], 0);
  EXPECT_EQ(peak["total_bytes"], 256 * kMiB);
  EXPECT_EQ(peak["bytes_at_peak"], 256 * kMiB);

  bool async_site = false;
  for (const json& site : report.at("sites")) {
    if (site.at("kind") == "async") async_site = site.at("live_bytes") == 512;
  }
  EXPECT_TRUE(async_site);
}

TEST_F(ReportWriter, FramesAreModulePlusOffsetWithBuildIds) {
  const json report = write_and_read();
  const json& modules = report.at("modules");
  bool found = false;
  for (const json& frame : report.at("frames")) {
    if (frame.at("function") != "churn") continue;
    found = true;
    const json& module = modules.at(frame.at("module").get<size_t>());
    EXPECT_NE(module.at("path").get<std::string>().find("liballocation_scenarios.so"),
              std::string::npos);
    EXPECT_EQ(module.at("build_id").get<std::string>().size(), 40u);  // SHA-1 build-id
    const uint64_t address = module.at("base").get<uint64_t>() + frame.at("offset").get<uint64_t>();
    EXPECT_GT(address, reinterpret_cast<uint64_t>(&churn));
    EXPECT_LT(address, reinterpret_cast<uint64_t>(&churn) + 4096);
  }
  EXPECT_TRUE(found);
  // The executable is listed by its real path.
  char exe[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  EXPECT_EQ(modules.at(0).at("path"), exe);
}

TEST_F(ReportWriter, AFrameOutsideEveryModuleKeepsItsAddress) {
  const uint64_t frames[] = {0x10};
  tracker_.on_alloc_with_frames(0x50000, 64, AllocationKind::kHost, 0, 0, frames, 1);
  const json report = write_and_read();
  bool found = false;
  for (const json& frame : report.at("frames")) {
    if (frame.at("offset") != 0x10) continue;
    found = true;
    EXPECT_EQ(frame.at("module"), -1);
    EXPECT_TRUE(frame.at("function").is_null());
  }
  EXPECT_TRUE(found);
}

TEST_F(ReportWriter, StrangeBytesInStringsStillMakeValidJson) {
  inputs_.process.cmdline = {"prog", "quote\" backslash\\ newline\n tab\t bell\x07",
                             "bad utf8 \xff\xfe end", "good utf8 \xc3\xa9\xe2\x82\xac"};
  inputs_.process.rank = std::string("not a number");
  const json report = write_and_read();
  const json& cmdline = report.at("process").at("cmdline");
  EXPECT_EQ(cmdline[1], "quote\" backslash\\ newline\n tab\t bell\x07");
  EXPECT_EQ(cmdline[2], "bad utf8 \xef\xbf\xbd\xef\xbf\xbd end");
  EXPECT_EQ(cmdline[3], "good utf8 \xc3\xa9\xe2\x82\xac");
  EXPECT_TRUE(report.at("process").at("rank").is_null());
}

TEST_F(ReportWriter, ReportsWithoutATrackerOrTimelineAreStillComplete) {
  inputs_.tracker = nullptr;
  inputs_.timeline = nullptr;
  const json report = write_and_read();
  EXPECT_TRUE(report.at("sites").empty());
  EXPECT_TRUE(report.at("stacks").empty());
  EXPECT_TRUE(report.at("timeline").at("samples").empty());
  EXPECT_EQ(report.at("peak").at("in_use_bytes"), 0);
}

TEST_F(ReportWriter, LeavesNoTemporaryFileAndReplacesAnOldReport) {
  const std::string directory = make_test_directory();
  const std::string path = directory + "/r.json";
  ASSERT_EQ(write_report(path, inputs_), "");
  inputs_.sequence = 5;
  ASSERT_EQ(write_report(path, inputs_), "");
  EXPECT_EQ(read_json(path).at("sequence"), 5);
  EXPECT_EQ(list_directory(directory), std::vector<std::string>{"r.json"});
}

// The report signal's case: a numbered series written while other threads allocate and free.
// Each report is self-consistent: its sites name existing stacks, its stacks existing frames,
// and the bytes the sites held at the peak add up to the process peak.
TEST(ReportSeries, ReportsWrittenWhileThreadsAllocateAreConsistent) {
  TrackerOptions options;
  options.own_module = {};
  Tracker tracker(options);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([&tracker, &stop, t] {
      for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
        const uint64_t key = (t << 40) | i;
        tracker.on_alloc(key, 512 * (1 + i % 64), AllocationKind::kDevice, 0, 0);
        if (i % 3 != 0) tracker.on_free(key);
      }
    });
  }
  const std::string directory = make_test_directory();
  ReportInputs inputs;
  inputs.reason = "signal";
  inputs.process = read_process_info(std::nullopt);
  inputs.tracker = &tracker;
  for (uint64_t sequence = 0; sequence < 5; ++sequence) {
    inputs.sequence = sequence;
    const std::string path = expand_report_pattern(directory + "/series.%p.%n.json",
                                                   {getpid(), "", std::nullopt, 0, sequence});
    ASSERT_EQ(write_report(path, inputs), "");
    const json report = read_json(path);
    EXPECT_EQ(report.at("sequence"), sequence);
    uint64_t at_peak = 0;
    for (const json& site : report.at("sites")) {
      EXPECT_LT(site.at("stack").get<size_t>(), report.at("stacks").size());
      at_peak += site.at("bytes_at_peak").get<uint64_t>();
    }
    EXPECT_EQ(at_peak, report.at("peak").at("in_use_bytes").get<uint64_t>());
    for (const json& stack : report.at("stacks")) {
      for (const json& frame : stack.at("frames")) {
        EXPECT_LT(frame.get<size_t>(), report.at("frames").size());
      }
    }
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(list_directory(directory).size(), 5u);
}

TEST_F(ReportWriter, AHistoryAheadOfTheReportsFiguresNamesOnlyTheReportsSites) {
  // The control thread's tick saw three sites newer than the figures a report on another thread
  // (the exit report) copies: the report's history must not name them.
  const size_t site_count = tracker_.snapshot().sites.size();
  attribution::SiteHistory history(1 << 20);
  std::vector<uint64_t> live(site_count + 3, 4096);
  history.tick(1000.0, live.data(), live.size());
  inputs_.history = &history;
  const json report = write_and_read();
  const json& series = report.at("history").at("sites");
  ASSERT_FALSE(series.empty());
  std::set<size_t> named;
  for (const json& site : series) {
    named.insert(site.at("site").get<size_t>());
    EXPECT_LT(site.at("site").get<size_t>(), report.at("sites").size()) << site;
  }
  EXPECT_EQ(named.size(), report.at("sites").size());
}

TEST_F(ReportWriter, AnUnwritableDirectoryIsAnErrorNotACrash) {
  const std::string error = write_report("/proc/vramshim-no-such-dir/r.json", inputs_);
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
}

}  // namespace
}  // namespace vramshim::report
