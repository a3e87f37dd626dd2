// The report model: a vramshim report (shim/report/FORMAT.md) read into plain structs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/device_number.h"
#include "shim/support/figures.h"

namespace vramshim::analyzer {

// The most frames a stack may have. The shim writes at most 257 (StackCapture::kMaxDepth, Python's
// frames replacing some native ones, and the frame that marks a cut stack), PyTorch's snapshots a
// few hundred; only a hostile file holds more, and the call tree and its renderings, which recurse
// once per frame, would exhaust the thread's stack on a stack of hundreds of thousands.
inline constexpr size_t kMaxStackFrames = 4096;

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

// One block of a pool segment (FORMAT.md, "segments"). Version 1 reports list only the blocks that
// are not allocated.
struct SegmentBlock {
  int64_t offset = 0;  // from the segment's base
  int64_t size = 0;
  bool pending = false;    // freed, waiting for a fence
  bool allocated = false;  // handed out to the program; neither: free
  int64_t requested = 0;   // allocated blocks: the rounded request
  int64_t stack = -1;      // allocated blocks: index into Report::stacks; -1: none
};

// A segment of the pool and its blocks, in address order.
struct PoolSegment {
  int64_t device = 0;
  uint64_t base = 0;
  int64_t size = 0;
  // One of PyTorch's expandable segments (an imported snapshot's): a reserved range whose pieces
  // are mapped and unmapped ("segment_map" / "segment_unmap" events); `size` is what is mapped.
  bool expandable = false;
  std::vector<SegmentBlock> blocks;
};

// One site's live bytes over the run (FORMAT.md, "history"): a point per slot in which it changed.
struct HistoryPoint {
  int64_t slot = 0;  // index into History::slot_times
  int64_t last = 0;  // at the slot's last tick
  int64_t max = 0;   // the most at a tick of the slot from its first change in it on
};

struct SiteHistory {
  int64_t site = 0;     // index into Report::sites
  int64_t at_peak = 0;  // at History::peak_time
  std::vector<HistoryPoint> points;
};

struct History {
  int64_t budget_bytes = 0;
  int64_t ticks = 0;
  int64_t ticks_per_slot = 1;
  int64_t untracked_sites = 0;
  double peak_time = 0;
  int64_t peak_bytes = 0;
  std::vector<double> slot_times;  // each slot's last tick, oldest first
  std::vector<SiteHistory> sites;
};

// One recent event (FORMAT.md, "trace").
struct TraceEvent {
  double time = 0;
  std::string type;      // alloc | free | segment_alloc | segment_free | flush | trim | oom
  uint64_t address = 0;  // 0: none
  int64_t size = 0;
  int64_t device = -1;  // -1: none
  uint64_t stream = 0;  // 0: the call named none
  int64_t stack = -1;   // index into Report::stacks; -1: none
};

struct Trace {
  int64_t capacity = 0;
  int64_t recorded = 0;
  std::vector<TraceEvent> events;  // oldest first
};

// A site among those holding the most at an out-of-memory failure.
struct LeadingSite {
  int64_t stack = -1;  // index into Report::stacks; -1: no stack
  std::string kind;
  int64_t live_bytes = 0;
  int64_t live_count = 0;
};

// Another process on the failing device, as the shim found it.
struct OtherProcess {
  int64_t pid = 0;
  std::string command;
  std::string source;  // "vramshim" (its control socket) or "nvml"
  std::optional<int64_t> in_use_bytes;
  std::optional<int64_t> cached_bytes;
  std::optional<int64_t> used_bytes;  // NVML's figure
};

// The allocation the shim failed with out-of-memory.
struct FailedRequest {
  int64_t bytes = 0;
  std::string kind;
  int64_t device = 0;
  std::string call;    // the driver entry point's family, e.g. "cuMemAlloc"
  std::string cause;   // driver | limit | too_large
  int64_t stack = -1;  // index into Report::stacks; -1: none
};

// The "oom" object of an out-of-memory report (FORMAT.md): the figures at the moment of the
// failure.
struct OutOfMemory {
  FailedRequest request;
  double time = 0;
  int64_t failures = 1;
  std::string verdict;  // limit | too_large | held_elsewhere | fragmentation | exhaustion
  std::string explanation;
  std::optional<int64_t> device_total_bytes;
  std::optional<int64_t> device_free_bytes;
  int64_t held_elsewhere_bytes = 0;
  int64_t in_use_bytes = 0;
  int64_t cached_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t direct_bytes = 0;
  std::optional<int64_t> limit_bytes;
  int64_t pool_free_bytes = 0;
  int64_t pool_largest_free_block = 0;
  std::vector<LeadingSite> leading_sites;  // most live bytes first
  std::vector<OtherProcess> other_processes;
  std::vector<std::string> unasked;  // what about other processes was not asked, and why
  std::vector<PoolSegment> segments;
};

// The signal a process's report says ended it (FORMAT.md): a crash report's fatal signal
// ("crash"), or the SIGTERM or SIGHUP that made an exit report ("terminated").
struct EndingSignal {
  int64_t signal = 0;
  std::string signal_name;             // "SIGSEGV"; empty when the report has none
  int64_t code = 0;                    // si_code
  std::optional<std::string> address;  // "crash": si_addr of a fault, hex; none for a signal sent
  std::optional<int64_t> sender_pid;   // "terminated": none when the kernel sent it
  std::optional<int64_t> thread_id;    // the thread it struck
};

struct ProcessInfo {
  int64_t pid = 0;
  std::vector<std::string> cmdline;
  std::string exe;
  std::string host;
  std::optional<int64_t> rank;
  double start_time = 0;
  double report_time = 0;
  // Seconds from the start to `time` (Unix seconds), never below 0: the start is known to 10 ms
  // and the shim reads a coarse clock, so a moment in the first milliseconds may read before it.
  double seconds_since_start(double time) const { return std::max(0.0, time - start_time); }
  // Filled for the processes of a merged report ("merged_from"); empty for a single process's
  // report.
  std::string reason;
  std::vector<DeviceFigures> devices;
  int64_t peak_in_use_bytes = 0;
  std::vector<TimelineSample> timeline;
  std::optional<OutOfMemory> oom;  // its stack ids are the merged report's
  // How it ended, for a single process's report (from its top-level "crash" and "terminated") as
  // for each process of a merged report.
  std::optional<EndingSignal> crash;
  std::optional<EndingSignal> terminated;
  // That process's pool segments and recent events (version 3 merged reports; FORMAT.md, "Merged
  // reports"), their stack ids the merged report's.
  std::vector<PoolSegment> segments;
  std::optional<Trace> trace;
};

// One PT_LOAD program header of a module as it was mapped (FORMAT.md, "modules").
struct LoadSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t filesz = 0;
  uint64_t offset = 0;

  bool operator==(const LoadSegment& other) const {
    return vaddr == other.vaddr && memsz == other.memsz && filesz == other.filesz &&
           offset == other.offset;
  }
};

struct Module {
  std::string path;
  uint64_t base = 0;
  std::string build_id;  // lowercase hex, empty when unknown
  bool loaded = true;    // false: unloaded (dlclose) before the report was written
  bool deleted = false;  // its file was deleted or replaced while the program ran
  // What the file at `path` must have to be the one that ran; empty when the report has none.
  std::vector<LoadSegment> segments;
};

struct Frame {
  bool python = false;
  // A native frame resolved before the report was written (imported from a PyTorch snapshot):
  // function, file and line are final, there is no module or offset to resolve.
  bool symbolized = false;
  int64_t module = -1;  // index into Report::modules; -1: offset is an absolute address
  uint64_t offset = 0;
  std::string function;  // dladdr name (native), the Python function, or the symbolized function
  std::string file;      // Python and symbolized frames only
  int64_t line = 0;      // Python and symbolized frames only
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
  std::optional<int64_t> stack_table_bytes;  // VRAMSHIM_STACK_TABLE; absent in older reports
  int64_t allocations_past_stack_table = 0;  // their new stacks were not kept (FORMAT.md)
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
  std::optional<OutOfMemory> oom;        // out-of-memory reports (reason "oom") only
  std::vector<ProcessInfo> merged_from;  // non-empty only for a merged report
  // Version 2 reports of one process: every segment of the pools, the sites' history and the
  // recent events (each absent when off).
  std::vector<PoolSegment> segments;
  std::optional<History> history;
  std::optional<Trace> trace;

  bool merged() const { return !merged_from.empty(); }
};

}  // namespace vramshim::analyzer
