// Reading reports: valid ones load, bad ones are rejected with a one-line message, never a crash.
#include "analyzer/model/report_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "analyzer/model/json_guard.h"
#include "analyzer/model/report_parser.h"
#include "analyzer/model/report_writer.h"

namespace vramshim::analyzer {
namespace {

const char kValid[] = R"({
  "format": "vramshim-report", "version": 1, "reason": "exit", "sequence": 0,
  "process": {"pid": 7, "cmdline": ["prog"], "exe": "/bin/prog", "host": "h", "rank": null,
              "start_time": 1.5, "report_time": 2.5},
  "devices": [{"device": 0, "in_use_bytes": 10, "limit_bytes": null}],
  "peak": {"in_use_bytes": 10, "time": 2.0},
  "modules": [{"id": 0, "path": "/bin/prog", "base": 4096, "build_id": ""}],
  "frames": [{"id": 0, "module": 0, "offset": 16, "function": "f"},
             {"id": 1, "python": true, "file": "a.py", "line": 3, "function": "g"}],
  "stacks": [{"id": 0, "frames": [0, 1]}],
  "sites": [{"stack": 0, "kind": "device", "live_bytes": 10, "live_count": 1, "total_bytes": 10,
             "total_count": 1, "peak_bytes": 10, "bytes_at_peak": 10}],
  "timeline": {"interval_ms": 100, "samples": [[2.0, 10, 0]]}
})";

// kValid with the "oom" object of an out-of-memory report.
std::string with_oom(const std::string& oom) {
  std::string text = kValid;
  const std::string timeline = "\n  \"timeline\"";
  return text.insert(text.find(timeline), "\n  \"oom\": " + oom + ",");
}

const char kOom[] = R"({
    "request": {"bytes": 3072, "kind": "device", "device": 0, "call": "cuMemAlloc",
                "cause": "driver", "stack": 0},
    "time": 2.25, "failures": 2, "verdict": "fragmentation",
    "explanation": "fragmentation: no free block of 3.0 KiB",
    "device_total_bytes": 8192, "device_free_bytes": 0, "held_elsewhere_bytes": 1024,
    "in_use_bytes": 4096, "cached_bytes": 2048, "reserved_bytes": 6144, "direct_bytes": 512,
    "limit_bytes": null, "pool_free_bytes": 1536, "pool_largest_free_block": 1024,
    "leading_sites": [{"stack": 0, "kind": "device", "live_bytes": 10, "live_count": 1}],
    "other_processes": [{"pid": 99, "command": "serve", "source": "nvml",
                         "in_use_bytes": null, "cached_bytes": null, "used_bytes": 1024}],
    "unasked": ["no socket"],
    "segments": [{"base": 65536, "size": 4096, "blocks": [[0, 1024, "free"], [2048, 512, "pending"]]},
                 {"base": 131072, "size": 2048, "blocks": [[1536, 512, "free"]]}]
  })";

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The message read_report throws for the file at `path`; fails the test if it does not throw.
std::string rejection_of(const std::string& path) {
  try {
    read_report(path);
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
    EXPECT_EQ(message.rfind(path, 0), 0u) << "names the file: " << message;
    return message;
  }
  ADD_FAILURE() << path << " was accepted";
  return {};
}

// The message read_report throws for `text`; fails the test if it does not throw.
std::string rejection(const std::string& name, const std::string& text) {
  return rejection_of(write(name, text));
}

TEST(ReportReader, ReadsAValidReport) {
  const Report report = read_report(write("valid.json", kValid));
  EXPECT_EQ(report.process.pid, 7);
  EXPECT_FALSE(report.process.rank.has_value());
  ASSERT_EQ(report.frames.size(), 2u);
  EXPECT_EQ(report.frames[0].function, "f");
  EXPECT_TRUE(report.frames[1].python);
  EXPECT_EQ(report.frames[1].file, "a.py");
  ASSERT_EQ(report.stacks.size(), 1u);
  EXPECT_EQ(report.stacks[0].frames, (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(report.sites.size(), 1u);
  EXPECT_EQ(report.sites[0].live_bytes, 10);
  ASSERT_EQ(report.timeline.size(), 1u);
  EXPECT_EQ(report.timeline[0].in_use_bytes, 10);
  EXPECT_FALSE(report.merged());
  EXPECT_FALSE(report.oom.has_value());
}

// VRAMSHIM_STACK_TABLE's fields in "config"; a report older than them had no budget.
TEST(ReportReader, ReadsTheStackTableBudgetAndWhatWentPastIt) {
  const Report old = read_report(write("no_stack_table.json", kValid));
  EXPECT_FALSE(old.config.stack_table_bytes.has_value());
  EXPECT_EQ(old.config.allocations_past_stack_table, 0);
  const Report report =
      read_report(write("stack_table.json",
                        replaced(kValid, "\"devices\"",
                                 "\"config\": {\"stacks\": \"all\", \"stack_table_bytes\": 65536, "
                                 "\"allocations_past_stack_table\": 12},\n  \"devices\"")));
  EXPECT_EQ(report.config.stack_table_bytes, 65536);
  EXPECT_EQ(report.config.allocations_past_stack_table, 12);
}

TEST(ReportReader, ReadsTheOutOfMemorySection) {
  const Report report = read_report(write("oom.json", with_oom(kOom)));
  ASSERT_TRUE(report.oom.has_value());
  const OutOfMemory& oom = *report.oom;
  EXPECT_EQ(oom.request.bytes, 3072);
  EXPECT_EQ(oom.request.kind, "device");
  EXPECT_EQ(oom.request.device, 0);
  EXPECT_EQ(oom.request.call, "cuMemAlloc");
  EXPECT_EQ(oom.request.cause, "driver");
  EXPECT_EQ(oom.request.stack, 0);
  EXPECT_DOUBLE_EQ(oom.time, 2.25);
  EXPECT_EQ(oom.failures, 2);
  EXPECT_EQ(oom.verdict, "fragmentation");
  EXPECT_EQ(oom.explanation, "fragmentation: no free block of 3.0 KiB");
  EXPECT_EQ(oom.device_total_bytes, 8192);
  EXPECT_EQ(oom.device_free_bytes, 0);
  EXPECT_EQ(oom.held_elsewhere_bytes, 1024);
  EXPECT_EQ(oom.in_use_bytes, 4096);
  EXPECT_EQ(oom.cached_bytes, 2048);
  EXPECT_EQ(oom.reserved_bytes, 6144);
  EXPECT_EQ(oom.direct_bytes, 512);
  EXPECT_FALSE(oom.limit_bytes.has_value());
  EXPECT_EQ(oom.pool_free_bytes, 1536);
  EXPECT_EQ(oom.pool_largest_free_block, 1024);
  ASSERT_EQ(oom.leading_sites.size(), 1u);
  EXPECT_EQ(oom.leading_sites[0].stack, 0);
  EXPECT_EQ(oom.leading_sites[0].kind, "device");
  EXPECT_EQ(oom.leading_sites[0].live_bytes, 10);
  EXPECT_EQ(oom.leading_sites[0].live_count, 1);
  ASSERT_EQ(oom.other_processes.size(), 1u);
  const OtherProcess& other = oom.other_processes[0];
  EXPECT_EQ(other.pid, 99);
  EXPECT_EQ(other.command, "serve");
  EXPECT_EQ(other.source, "nvml");
  EXPECT_FALSE(other.in_use_bytes.has_value());
  EXPECT_FALSE(other.cached_bytes.has_value());
  EXPECT_EQ(other.used_bytes, 1024);
  EXPECT_EQ(oom.unasked, std::vector<std::string>{"no socket"});
  ASSERT_EQ(oom.segments.size(), 2u);
  EXPECT_EQ(oom.segments[0].base, 65536u);
  EXPECT_EQ(oom.segments[0].size, 4096);
  ASSERT_EQ(oom.segments[0].blocks.size(), 2u);
  EXPECT_EQ(oom.segments[0].blocks[1].offset, 2048);
  EXPECT_EQ(oom.segments[0].blocks[1].size, 512);
  EXPECT_TRUE(oom.segments[0].blocks[1].pending);
  EXPECT_FALSE(oom.segments[1].blocks[0].pending);
}

TEST(ReportReader, RejectsAMalformedOutOfMemorySection) {
  const std::string oom = kOom;
  auto rejection_with = [&](const std::string& name, const std::string& from,
                            const std::string& to) {
    return rejection(name, with_oom(replaced(oom, from, to)));
  };
  EXPECT_NE(rejection("oom_type.json", with_oom("[1]")).find("oom: must be an object"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_request.json", "\"request\"", "\"requested\"")
                .find("oom.request: missing"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_bytes.json", "\"bytes\": 3072", "\"bytes\": \"3072\"")
                .find("oom.request.bytes: must be an integer"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_stack.json", "\"cause\": \"driver\", \"stack\": 0",
                           "\"cause\": \"driver\", \"stack\": 5")
                .find("oom.request.stack: no such stack"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_verdict.json", "\"verdict\": \"fragmentation\"", "\"verdict\": 3")
                .find("oom.verdict: must be a string"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_negative.json", "\"in_use_bytes\": 4096", "\"in_use_bytes\": -1")
                .find("oom.in_use_bytes: must not be negative"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_site.json", "\"stack\": 0, \"kind\"", "\"stack\": 7, \"kind\"")
                .find("oom.leading_sites[0].stack: no such stack"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_unasked.json", "[\"no socket\"]", "[7]")
                .find("oom.unasked: must be an array of strings"),
            std::string::npos);
  EXPECT_NE(rejection_with("oom_segments.json", "\"segments\": [", "\"segments\": 7, \"x\": [")
                .find("oom.segments: must be an array"),
            std::string::npos);
  EXPECT_NE(
      rejection_with("oom_state.json", "\"pending\"", "\"freed\"")
          .find("oom.segments[0].blocks[1]: state must be \"free\", \"pending\" or \"allocated\""),
      std::string::npos);
  EXPECT_NE(rejection_with("oom_block.json", "[1536, 512, \"free\"]", "[1792, 512, \"free\"]")
                .find("oom.segments[1].blocks[0]: block lies outside its segment of 2048 bytes"),
            std::string::npos);
  EXPECT_NE(
      rejection_with("oom_block_shape.json", "[0, 1024, \"free\"]", "[0, 1024]")
          .find("oom.segments[0].blocks[0]: must be [offset, size, state] or [offset, size, state, "
                "requested, stack]"),
      std::string::npos);
}

// A merged report keeps the out-of-memory section of each process that had one.
TEST(ReportReader, ReadsBackTheOutOfMemorySectionsOfAMergedReport) {
  const Report single = read_report(write("oom_single.json", with_oom(kOom)));
  Report written;
  written.frames = single.frames;
  written.modules = single.modules;
  written.stacks = single.stacks;
  written.merged_from.resize(2);
  written.merged_from[1].oom = single.oom;
  const std::string path = temp_path("oom_merged.json");
  {
    std::ofstream out(path, std::ios::binary);
    write_report(out, written);
  }
  const Report read = read_report(path);
  EXPECT_FALSE(read.oom.has_value());
  ASSERT_EQ(read.merged_from.size(), 2u);
  EXPECT_FALSE(read.merged_from[0].oom.has_value());
  ASSERT_TRUE(read.merged_from[1].oom.has_value());
  const OutOfMemory& oom = *read.merged_from[1].oom;
  EXPECT_EQ(oom.request.bytes, 3072);
  EXPECT_EQ(oom.request.stack, 0);
  EXPECT_EQ(oom.explanation, single.oom->explanation);
  EXPECT_EQ(oom.device_total_bytes, 8192);
  ASSERT_EQ(oom.leading_sites.size(), 1u);
  EXPECT_EQ(oom.leading_sites[0].live_bytes, 10);
  ASSERT_EQ(oom.other_processes.size(), 1u);
  EXPECT_EQ(oom.other_processes[0].used_bytes, 1024);
  EXPECT_EQ(oom.unasked, single.oom->unasked);
  ASSERT_EQ(oom.segments.size(), 2u);
  ASSERT_EQ(oom.segments[0].blocks.size(), 2u);
  EXPECT_TRUE(oom.segments[0].blocks[1].pending);
  EXPECT_EQ(oom.segments[1].blocks[0].offset, 1536);
}

// Every figure of shim/support/device_figures.def and site_figures.def, each with its own value,
// is written (devices, merged_from, sites, ranks) and read back.
TEST(ReportReader, ReadsBackEveryFigureOfAWrittenReport) {
  Report written;
  written.merged_from.emplace_back();
  DeviceFigures device;
  device.device = 1;
  int64_t next = 100;
#define VRAMSHIM_DEVICE_FIGURE(name, ...) device.name = next++;
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  written.devices = {device};
  written.merged_from[0].devices = {device};
  Site site;
  RankFigures share;
#define VRAMSHIM_SITE_FIGURE(name, ...) \
  site.name = next++;                   \
  share.name = next++;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  site.kind = "device";
  site.ranks = {share};
  written.sites = {site};
  const std::string path = temp_path("every_figure.json");
  {
    std::ofstream out(path, std::ios::binary);
    write_report(out, written);
  }
  const Report read = read_report(path);
  ASSERT_EQ(read.devices.size(), 1u);
  ASSERT_EQ(read.merged_from.size(), 1u);
  ASSERT_EQ(read.merged_from[0].devices.size(), 1u);
  ASSERT_EQ(read.sites.size(), 1u);
  ASSERT_EQ(read.sites[0].ranks.size(), 1u);
  EXPECT_EQ(read.devices[0].device, 1);
#define VRAMSHIM_DEVICE_FIGURE(name, ...)                \
  EXPECT_EQ(read.devices[0].name, device.name) << #name; \
  EXPECT_EQ(read.merged_from[0].devices[0].name, device.name) << #name;
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
#define VRAMSHIM_SITE_FIGURE(name, ...)              \
  EXPECT_EQ(read.sites[0].name, site.name) << #name; \
  EXPECT_EQ(read.sites[0].ranks[0].name, share.name) << #name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
}

// kValid as version 2, with the sections it added (FORMAT.md, "Segments", "History", "Trace").
std::string version_2(const std::string& history, const std::string& trace) {
  std::string text = replaced(kValid, "\"version\": 1", "\"version\": 2");
  const std::string timeline = "\n  \"timeline\"";
  return text.insert(
      text.find(timeline),
      "\n  \"segments\": [{\"device\": 1, \"base\": 65536, \"size\": 4096, \"blocks\": "
      "[[0, 1024, \"allocated\", 1000, 0], [1024, 3072, \"free\", 0, -1]]}],"
      "\n  \"history\": " +
          history + ",\n  \"trace\": " + trace + ",");
}

const char kHistory[] = R"({"budget_bytes": 65536, "ticks": 3, "ticks_per_slot": 2,
    "untracked_sites": 0, "peak": {"time": 2.0, "in_use_bytes": 10},
    "slot_times": [1.7, 2.0], "sites": [{"site": 0, "at_peak": 10, "points": [[0, 4, 4], [1, 10, 12]]}]})";
const char kTrace[] = R"({"capacity": 8, "recorded": 9, "events": [
    [1.6, "segment_alloc", 65536, 4096, 1, null, -1], [1.65, "alloc", 65536, 1024, 1, 7, 0],
    [1.9, "flush", null, 0, null, null, -1]]})";

// CLOCK_REALTIME stepped back between the shim's two ticks: the later slot keeps the earlier time.
TEST(ReportReader, HoldsASlotTimeThatStepsBackAtTheOneBefore) {
  const std::string history = replaced(kHistory, "[1.7, 2.0]", "[1.7, 1.5]");
  const Report report = read_report(write("stepped_back.json", version_2(history, kTrace)));
  ASSERT_TRUE(report.history);
  EXPECT_EQ(report.history->slot_times, (std::vector<double>{1.7, 1.7}));
}

TEST(ReportReader, ReadsTheSegmentsHistoryAndTraceOfVersion2) {
  const Report report = read_report(write("v2.json", version_2(kHistory, kTrace)));
  EXPECT_EQ(report.version, 2);
  ASSERT_EQ(report.segments.size(), 1u);
  EXPECT_EQ(report.segments[0].device, 1);
  ASSERT_EQ(report.segments[0].blocks.size(), 2u);
  EXPECT_TRUE(report.segments[0].blocks[0].allocated);
  EXPECT_EQ(report.segments[0].blocks[0].requested, 1000);
  EXPECT_EQ(report.segments[0].blocks[0].stack, 0);
  EXPECT_FALSE(report.segments[0].blocks[1].allocated);
  EXPECT_FALSE(report.segments[0].blocks[1].pending);
  ASSERT_TRUE(report.history);
  EXPECT_EQ(report.history->ticks_per_slot, 2);
  ASSERT_EQ(report.history->sites.size(), 1u);
  EXPECT_EQ(report.history->sites[0].points[1].max, 12);
  EXPECT_EQ(report.history->sites[0].at_peak, 10);
  ASSERT_TRUE(report.trace);
  EXPECT_EQ(report.trace->recorded, 9);
  ASSERT_EQ(report.trace->events.size(), 3u);
  EXPECT_EQ(report.trace->events[1].type, "alloc");
  EXPECT_EQ(report.trace->events[1].stream, 7u);
  EXPECT_EQ(report.trace->events[1].stack, 0);
  EXPECT_EQ(report.trace->events[2].device, -1);
  EXPECT_EQ(report.trace->events[2].address, 0u);
  // A version 1 report has none of them.
  const Report old = read_report(write("v1.json", kValid));
  EXPECT_TRUE(old.segments.empty());
  EXPECT_FALSE(old.history);
  EXPECT_FALSE(old.trace);
}

// Shims before the fix of SiteHistory::append wrote two points of one slot for a site whose record
// filled the history's budget in the middle of a tick: their reports are read, the two points one.
TEST(ReportReader, ReadsTwoPointsOfOneSlotAsOne) {
  const std::string history = replaced(kHistory, "[1, 10, 12]", "[0, 10, 12], [1, 10, 12]");
  const Report report = read_report(write("same_slot.json", version_2(history, kTrace)));
  ASSERT_TRUE(report.history);
  const auto& points = report.history->sites.at(0).points;
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].slot, 0);
  EXPECT_EQ(points[0].last, 10);
  EXPECT_EQ(points[0].max, 12);
  EXPECT_EQ(points[1].slot, 1);
}

TEST(ReportReader, RejectsAMalformedHistoryOrTrace) {
  const std::pair<std::string, std::string> cases[] = {
      {replaced(kHistory, "[0, 4, 4], [1, 10, 12]", "[1, 4, 4], [0, 10, 12]"), "slots must rise"},
      {replaced(kHistory, "[0, 4, 4]", "[-1, 4, 4]"), "slots must rise"},
      {replaced(kHistory, "[1, 10, 12]", "[2, 10, 12]"), "slots must rise"},
      {replaced(kHistory, "[1, 10, 12]", "[1, 10, 9]"), "max at least last"},
      {replaced(kHistory, "\"site\": 0", "\"site\": 1"), "no such site"},
      {replaced(kTrace, "\"flush\"", "\"explode\""), "unknown event type"},
      {replaced(kTrace, "1, 7, 0]", "1, 7, 3]"), "no such stack"},
      {replaced(kTrace, "[1.9, \"flush\", null, 0, null, null, -1]", "[1.9, \"flush\"]"),
       "must be [time, type"},
  };
  for (const auto& [section, why] : cases) {
    const bool history = section.find("slot_times") != std::string::npos;
    const std::string message = rejection(
        "bad-v2.json", version_2(history ? section : kHistory, history ? kTrace : section));
    EXPECT_NE(message.find(why), std::string::npos) << message;
  }
}

// Figures FORMAT.md says cannot be negative, times that are not times, blocks that overlap: each
// would be printed or exported as if right ("peak: -4096.0 PiB", a time exported as INT64_MIN).
TEST(ReportReader, RejectsFiguresAndTimesNoWriterMakes) {
  const std::pair<std::string, std::string> cases[] = {
      {replaced(kValid, "\"peak\": {\"in_use_bytes\": 10", "\"peak\": {\"in_use_bytes\": -10"),
       "peak.in_use_bytes: must not be negative"},
      {replaced(kValid, "\"rank\": null", "\"rank\": -1"), "process.rank: must not be negative"},
      {replaced(kValid, "\"start_time\": 1.5", "\"start_time\": 1e13"),
       "process.start_time: is not a time"},
      {replaced(kValid, "\"report_time\": 2.5", "\"report_time\": -2.5"),
       "process.report_time: is not a time"},
      {replaced(kValid, "[[2.0, 10, 0]]", "[[1e308, 10, 0]]"), "timeline.samples: is not a time"},
      {replaced(kValid, "[[2.0, 10, 0]]", "[[2.0, -10, 0]]"), "must not be negative"},
      {version_2(kHistory, replaced(kTrace, "[1.65, ", "[1e13, ")), "is not a time"},
      {replaced(version_2(kHistory, kTrace), "[1024, 3072, \"free\", 0, -1]",
                "[512, 3072, \"free\", 0, -1]"),
       "overlaps the block before it"},
      {replaced(version_2(kHistory, kTrace), "\"allocated\", 1000, 0]", "\"allocated\", 2000, 0]"),
       "requested bytes outside"},
  };
  for (const auto& [text, why] : cases) {
    const std::string message = rejection("absurd.json", text);
    EXPECT_NE(message.find(why), std::string::npos) << why << ": " << message;
  }
}

TEST(ReportReader, RejectsEmptyFile) {
  EXPECT_NE(rejection("empty.json", "").find("empty"), std::string::npos);
}

TEST(ReportReader, RejectsTruncatedReport) {
  const std::string text = kValid;
  EXPECT_NE(rejection("truncated.json", text.substr(0, text.size() / 2)).find("truncated"),
            std::string::npos);
}

TEST(ReportReader, RejectsNonJson) {
  EXPECT_NE(rejection("garbage.json", "PK\x03\x04 this is a zip file").find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(rejection("array.json", "[1, 2, 3]").find("not a JSON object"), std::string::npos);
}

TEST(ReportReader, RejectsANulByteWhereverItIs) {
  // The parser takes one for the end of the text: a report followed by "\0garbage" passed.
  const std::string valid = kValid;
  const std::string followed = valid + std::string(1, '\0') + "garbage";
  EXPECT_NE(rejection("followed.json", followed)
                .find("a NUL byte at byte " + std::to_string(valid.size())),
            std::string::npos);
  const std::string inside = valid.substr(0, 10) + std::string(1, '\0') + valid.substr(10);
  EXPECT_NE(rejection("inside.json", inside).find("not valid JSON (a NUL byte at byte 10)"),
            std::string::npos);
}

TEST(ReportReader, RejectsOtherFormats) {
  const std::string message =
      rejection("format.json", replaced(kValid, "\"vramshim-report\"", "\"heaptrack\""));
  EXPECT_NE(message.find("not a vramshim report"), std::string::npos) << message;
}

TEST(ReportReader, RejectsNewerVersion) {
  const std::string message =
      rejection("version.json", replaced(kValid, "\"version\": 1", "\"version\": 4"));
  EXPECT_NE(message.find("newer"), std::string::npos) << message;
}

TEST(ReportReader, RejectsMissingFields) {
  EXPECT_NE(
      rejection("nosites.json", replaced(kValid, "\"sites\"", "\"sights\"")).find("sites: missing"),
      std::string::npos);
  EXPECT_NE(rejection("nokind.json", replaced(kValid, "\"kind\"", "\"kin\""))
                .find("sites[0].kind: missing"),
            std::string::npos);
  EXPECT_NE(
      rejection("nopid.json", replaced(kValid, "\"pid\"", "\"pod\"")).find("process.pid: missing"),
      std::string::npos);
}

TEST(ReportReader, RejectsWrongTypesAndDanglingReferences) {
  EXPECT_NE(rejection("type.json", replaced(kValid, "\"live_bytes\": 10", "\"live_bytes\": \"10\""))
                .find("sites[0].live_bytes: must be an integer"),
            std::string::npos);
  EXPECT_NE(
      rejection("negative.json", replaced(kValid, "\"live_bytes\": 10", "\"live_bytes\": -10"))
          .find("must not be negative"),
      std::string::npos);
  EXPECT_NE(rejection("frame.json", replaced(kValid, "\"frames\": [0, 1]", "\"frames\": [0, 9]"))
                .find("no such frame 9"),
            std::string::npos);
  EXPECT_NE(rejection("stack.json", replaced(kValid, "\"stack\": 0", "\"stack\": 4"))
                .find("no such stack"),
            std::string::npos);
  EXPECT_NE(rejection("module.json", replaced(kValid, "\"module\": 0", "\"module\": 3"))
                .find("no such module"),
            std::string::npos);
}

TEST(ReportReader, ValidatesStacks) {
  EXPECT_NE(
      rejection("stacks_object.json", replaced(kValid, "\"stacks\": [", "\"stacks\": {\"x\": ["))
          .find("stacks: must be an array"),
      std::string::npos);
  EXPECT_NE(rejection("stack_string.json",
                      replaced(kValid, "\"frames\": [0, 1]", "\"frames\": [0, \"1\"]"))
                .find("stacks[0].frames: must hold frame ids"),
            std::string::npos);
  EXPECT_NE(
      rejection("stack_noframes.json", replaced(kValid, "\"frames\": [0, 1]", "\"frame\": [0, 1]"))
          .find("stacks[0].frames: missing"),
      std::string::npos);
  EXPECT_NE(rejection("stack_id.json", replaced(kValid, "{\"id\": 0, \"frames\": [0, 1]}",
                                                "{\"id\": 5, \"frames\": [0, 1]}"))
                .find("dense"),
            std::string::npos);
  for (const char* id : {"[]", "{}", "\"0\""}) {
    EXPECT_NE(rejection("stack_id_kind.json",
                        replaced(kValid, "{\"id\": 0, \"frames\": [0, 1]}",
                                 std::string("{\"id\": ") + id + ", \"frames\": [0, 1]}"))
                  .find("stacks[0].id: must be an integer"),
              std::string::npos)
        << id;
  }
  EXPECT_NE(rejection("nostacks.json", replaced(kValid, "\"stacks\":", "\"stax\":"))
                .find("stacks: missing"),
            std::string::npos);
  // Unknown members, even nested ones, are ignored.
  const Report report = read_report(write(
      "stack_extra.json",
      replaced(
          kValid, "{\"id\": 0, \"frames\": [0, 1]}",
          "{\"id\": 0, \"note\": {\"a\": [1, {\"b\": 2}]}, \"frames\": [0, 1], \"hash\": 7}")));
  ASSERT_EQ(report.stacks.size(), 1u);
  EXPECT_EQ(report.stacks[0].frames, (std::vector<uint32_t>{0, 1}));
}

// The call tree recurses once per frame: a stack longer than any the shim writes is refused at
// once, whatever the command.
TEST(ReportReader, RejectsStacksLongerThanTheBound) {
  const auto stack_of = [](size_t frames) {
    std::string ids = "0";
    for (size_t i = 1; i < frames; ++i) ids += ", 0";
    return replaced(kValid, "\"frames\": [0, 1]", "\"frames\": [" + ids + "]");
  };
  const Report longest = read_report(write("longest_stack.json", stack_of(kMaxStackFrames)));
  ASSERT_EQ(longest.stacks.size(), 1u);
  EXPECT_EQ(longest.stacks[0].frames.size(), kMaxStackFrames);
  EXPECT_NE(rejection("too_long_stack.json", stack_of(kMaxStackFrames + 1))
                .find("stacks[0].frames: 4097 frames, more than the 4096 a stack may have"),
            std::string::npos);
}

TEST(ReportReader, RejectsDeepNestingWithoutRecursing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(rejection("deep.json", deep).find("nested deeper"), std::string::npos);
  const std::string deep_inside = replaced(kValid, "\"sequence\": 0", "\"sequence\": " + deep);
  EXPECT_NE(rejection("deep_inside.json", deep_inside).find("nested deeper"), std::string::npos);
}

TEST(ReportReader, RejectsHugeStrings) {
  const std::string huge = replaced(kValid, "\"/bin/prog\", \"host\"",
                                    "\"" + std::string(3 << 20, 'x') + "\", \"host\"");
  EXPECT_NE(rejection("huge_string.json", huge).find("string longer than"), std::string::npos);
}

TEST(ReportReader, RejectsHugeFilesBeforeReadingThem) {
  const std::string path = temp_path("huge.json");
  std::ofstream(path) << "{";
  // Sparse: no disk space used, but the size says 5 GiB.
  ASSERT_EQ(::truncate(path.c_str(), int64_t{5} << 30), 0);
  try {
    read_report(path);
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

// A FIFO is refused without being opened: a writer waiting at it is never let in, and the reader
// does not wait for one either.
TEST(ReportReader, RefusesAFifoWithoutOpeningIt) {
  const std::string path = temp_path("fifo.json");
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::atomic<bool> writer_got_in{false};
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // waits for a reader
    writer_got_in = true;
    if (fd >= 0 && ::write(fd, kValid, sizeof(kValid) - 1) >= 0) ::close(fd);
  });
  EXPECT_EQ(rejection_of(path), path + ": is a FIFO, not a regular file");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(writer_got_in) << "the FIFO was opened";
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // lets it go
  writer.join();
  ::close(reader);
  ::unlink(path.c_str());
}

// Devices are refused before anything is read: where read, /dev/zero would only be stopped by the
// size limit, and /dev/null would pass for an empty file.
TEST(JsonGuard, RefusesDevicesBeforeReadingThem) {
  JsonLimits limits;
  limits.max_file_bytes = 1 << 20;
  for (const std::string device : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    try {
      read_checked_json(device, limits);
      ADD_FAILURE() << device << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), device + ": is a character device, not a regular file");
    }
  }
}

// Files of the kernel's interfaces look regular but say a size of 0 and may never end or block
// (/proc/self/pagemap, /proc/kmsg): refused before a read.
TEST(JsonGuard, RefusesTheKernelsInterfaceFiles) {
  for (const std::string file : {"/proc/self/maps", "/proc/self/pagemap"}) {
    try {
      read_checked_json(file, JsonLimits{});
      ADD_FAILURE() << file << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()),
                file + ": is a file of the kernel's procfs, not a regular file");
    }
  }
}

TEST(ReportReader, RejectsMissingFile) {
  EXPECT_THROW(read_report(temp_path("does-not-exist.json")), std::runtime_error);
}

TEST(JsonGuard, AllowsEscapedQuotesAndBracketsInStrings) {
  const std::string text = R"({"a": "[[[[\"]]]]{{{", "b": [1, [2]]})";
  const std::string path = write("escaped.json", text);
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_EQ(read_checked_json(path, limits), text);
  limits.max_depth = 2;
  EXPECT_THROW(read_checked_json(path, limits), std::runtime_error);
}

// Members the reader does not read are skipped as they are parsed, at any depth: a DOM of them (17
// million empty objects in a 51 MB file) took gigabytes.
TEST(ReportReader, KeepsOnlyTheMembersItReads) {
  std::string text = replaced(kValid, "\"reason\": \"exit\",",
                              "\"junk\": [{}, {\"a\": [1, {}]}], \"reason\": \"exit\",");
  text = replaced(text, "\"pid\": 7,", "\"pid\": 7, \"junk\": {\"b\": {}},");
  text = replaced(text, "\"kind\": \"device\",", "\"kind\": \"device\", \"junk\": [[], null],");
  const ParsedReport parsed = parse_report_text(text, "junk.json");
  EXPECT_FALSE(parsed.document.contains("junk"));
  EXPECT_FALSE(parsed.document["process"].contains("junk"));
  EXPECT_FALSE(parsed.document["sites"][0].contains("junk"));
  EXPECT_EQ(parsed.document["process"]["pid"], 7);
  EXPECT_EQ(parsed.document["sites"][0]["live_bytes"], 10);
  const Report report = read_report(write("junk.json", text));
  EXPECT_EQ(report.process.pid, 7);
  ASSERT_EQ(report.sites.size(), 1u);
  EXPECT_EQ(report.sites[0].live_bytes, 10);
  ASSERT_EQ(report.timeline.size(), 1u);
}

}  // namespace
}  // namespace vramshim::analyzer
