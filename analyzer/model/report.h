// The report model: a vramshim report (shim/report/FORMAT.md) read into plain structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/support/figures.h"

namespace vramshim::analyzer {

// One device's figures: "device" and those of shim/support/device_figures.def (an optional one, the
// limit, is absent when the report has null).
struct DeviceFigures {
  int64_t device = 0;
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, unit, presence, ...) \
  support::FigureValue<int64_t, support::FigurePresence::presence> name{};
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
};

struct TimelineSample {
  double time = 0;
  int64_t in_use_bytes = 0;
  int64_t cached_bytes = 0;
};

struct ProcessInfo {
  int64_t pid = 0;
  std::vector<std::string> cmdline;
  std::string exe;
  std::string host;
  std::optional<int64_t> rank;
  double start_time = 0;
  double report_time = 0;
  // Filled for the processes of a merged report ("merged_from"); empty for a single process's
  // report.
  std::string reason;
  std::vector<DeviceFigures> devices;
  int64_t peak_in_use_bytes = 0;
  std::vector<TimelineSample> timeline;
};

struct Module {
  std::string path;
  uint64_t base = 0;
  std::string build_id;  // lowercase hex, empty when unknown
};

struct Frame {
  bool python = false;
  int64_t module = -1;  // index into Report::modules; -1: offset is an absolute address
  uint64_t offset = 0;
  std::string function;  // dladdr name (native) or the Python function; empty when unknown
  std::string file;      // Python frames only
  int64_t line = 0;      // Python frames only
};

struct Stack {
  std::vector<uint32_t> frames;  // indices into Report::frames, innermost first
};

// One process's share of a site of a merged report.
struct RankFigures {
  int64_t process = 0;  // index into Report::merged_from
#define VRAMSHIM_SITE_FIGURE(name, ...) int64_t name = 0;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
};

struct Site {
  int64_t stack = -1;  // index into Report::stacks; -1: recorded with stacks off
  std::string kind;
#define VRAMSHIM_SITE_FIGURE(name, ...) int64_t name = 0;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  std::vector<RankFigures> ranks;  // merged reports only
};

struct CaptureConfig {
  bool pool = true;
  std::string stacks = "all";  // all | off | sample
  int64_t sample_bytes = 0;
  int64_t stack_depth = 0;
  std::optional<int64_t> limit_bytes;
  std::optional<int64_t> max_cached_bytes;
};

struct Report {
  std::string source;  // the path it was read from, for messages
  int64_t version = 1;
  std::string reason;
  int64_t sequence = 0;
  ProcessInfo process;
  CaptureConfig config;
  std::vector<DeviceFigures> devices;
  int64_t peak_in_use_bytes = 0;
  double peak_time = 0;
  std::vector<Module> modules;
  std::vector<Frame> frames;
  std::vector<Stack> stacks;
  std::vector<Site> sites;
  int64_t timeline_interval_ms = 0;
  std::vector<TimelineSample> timeline;
  std::vector<ProcessInfo> merged_from;  // non-empty only for a merged report

  bool merged() const { return !merged_from.empty(); }
};

}  // namespace vramshim::analyzer
