// Writes the JSON report of FORMAT.md, atomically.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/attribution/event_trace.h"
#include "shim/attribution/site_history.h"
#include "shim/attribution/timeline_buffer.h"
#include "shim/attribution/tracker.h"
#include "shim/oom/out_of_memory_facts.h"
#include "shim/python/python_stacks.h"
#include "shim/report/process_info.h"

namespace vramshim::report {

struct ConfigSummary {
  bool pool = true;
  attribution::StackMode stacks = attribution::StackMode::kAll;
  uint64_t sample_bytes = 0;
  int stack_depth = 64;
  std::optional<uint64_t> limit_bytes;
  std::optional<uint64_t> max_cached_bytes;
};

// One device's figures, written in this order after "device": N. A value of nullopt is written as
// null (e.g. "limit_bytes" without a limit).
struct DeviceFigures {
  int device = 0;
  std::vector<std::pair<std::string, std::optional<uint64_t>>> values;
};

// The signal behind a "crash" report, or behind an exit report a termination made (FORMAT.md,
// "crash" and "terminated").
struct CrashDetails {
  int signal = 0;
  std::string signal_name;          // "SIGSEGV"
  int code = 0;                     // si_code
  std::optional<uint64_t> address;  // the faulting address; none for a signal sent
  int thread_id = 0;
  bool termination = false;       // SIGTERM or SIGHUP: written as "terminated", without address
  std::optional<int> sender_pid;  // the process that sent it (kill, sigqueue)
};

struct ReportInputs {
  std::string reason;                 // exit | signal | socket | cli | oom | crash
  std::optional<CrashDetails> crash;  // with reason crash, or exit after a termination
  uint64_t sequence = 0;
  ProcessInfo process;
  ConfigSummary config;
  std::vector<DeviceFigures> devices;
  const attribution::Tracker* tracker = nullptr;          // null: no sites, stacks or frames
  const attribution::TimelineBuffer* timeline = nullptr;  // null: no samples
  // The figures at the report's time, the timeline's last sample: the buffer's samples are the
  // control thread's, every 100 ms at most, each the largest of its slot.
  std::optional<attribution::TimelineSample> timeline_end;
  // Names the Python frames (python::is_python_frame) that stacks carry; null: there are none.
  const python::PythonStacks* python = nullptr;
  // An out-of-memory failure to describe (reason "oom"); null: none.
  const oom::OutOfMemoryFacts* out_of_memory = nullptr;
  // Every site's history (null: off); the writer adds a last tick with the report's own figures.
  attribution::SiteHistory* history = nullptr;
  const attribution::EventTrace* trace = nullptr;  // null: no trace
  std::vector<pool::SegmentPicture> segments;      // the pools' segments now, every block
};

// Writes the report to `path` (temporary file in the same directory, fsync, rename), so a reader
// or a crash never leaves a partial file at `path`. Calls no CUDA function; takes the tracker's
// figures mutex once (to copy the sites), the stack table's intern mutex and the loader's lock
// (the modules frames name), the loader's lock again (dladdr), the history's and
// the trace's own locks (allocating threads drop their events while the trace is read).
// Returns an error message, empty on success.
std::string write_report(const std::string& path, const ReportInputs& inputs);

}  // namespace vramshim::report
