// The report model: a vramshim report (shim/report/FORMAT.md) read into plain structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vramshim::analyzer {

struct DeviceFigures {
  int64_t device = 0;
  int64_t in_use_bytes = 0;
  int64_t cached_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t peak_in_use_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t driver_alloc_calls = 0;
  int64_t driver_free_calls = 0;
  int64_t pool_hits = 0;
  int64_t pool_misses = 0;
  int64_t fences_issued = 0;
  int64_t synchronizations = 0;
  int64_t released_by_flush_bytes = 0;
  int64_t released_by_oom_bytes = 0;
  int64_t released_by_idle_bytes = 0;
  std::optional<int64_t> limit_bytes;
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
  int64_t live_bytes = 0;
  int64_t live_count = 0;
  int64_t total_bytes = 0;
  int64_t total_count = 0;
  int64_t peak_bytes = 0;
  int64_t bytes_at_peak = 0;
};

struct Site {
  int64_t stack = -1;  // index into Report::stacks; -1: recorded with stacks off
  std::string kind;
  int64_t live_bytes = 0;
  int64_t live_count = 0;
  int64_t total_bytes = 0;
  int64_t total_count = 0;
  int64_t peak_bytes = 0;
  int64_t bytes_at_peak = 0;
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
