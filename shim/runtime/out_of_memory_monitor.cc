#include "shim/runtime/out_of_memory_monitor.h"

#include <time.h>
#include <unistd.h>

#include <memory>

#include "shim/control/log.h"
#include "shim/control/socket_path.h"
#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/oom/detached_helper.h"
#include "shim/oom/explanation.h"
#include "shim/oom/frame_labels.h"
#include "shim/oom/other_processes.h"
#include "shim/runtime/driver_device_api.h"
#include "shim/runtime/with_context.h"
#include "shim/support/deferred_cancellation.h"
#include "shim/support/write_without_sigpipe.h"

namespace vramshim::runtime {
namespace {

// The stacks holding the most on the failing device: the report lists them, the block on stderr
// sums them by label into its five lines (one function reached from many callers is many stacks).
constexpr size_t kLeadingSites = 64;
constexpr size_t kFailingFrames = 6;

// Explanations run one at a time (explaining_), each on a helper of this lane.
oom::HelperLane& explanation_lane() {
  static oom::HelperLane lane;
  return lane;
}

double unix_seconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void write_to_stderr(const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n =
        support::write_without_sigpipe(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

// cuMemGetInfo of `device`: in the current context when it is that device's, else in the device's
// primary context while it is active (retained and released around the call, never made); false
// when neither answers (the figures are then left out).
bool device_mem_info(int device, size_t* free, size_t* total) {
  CUdevice current = 0;
  if (real::cuCtxGetDevice(&current) == CUDA_SUCCESS && current == device) {
    return real::cuMemGetInfo_v2(free, total) == CUDA_SUCCESS;
  }
  unsigned int flags = 0;
  int active = 0;
  CUcontext primary = nullptr;
  if (real::cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || !active ||
      real::cuDevicePrimaryCtxRetain(&primary, device) != CUDA_SUCCESS) {
    return false;
  }
  const bool answered = with_context(primary, [&] {
                          return real::cuMemGetInfo_v2(free, total) == CUDA_SUCCESS;
                        }).value_or(false);
  real::cuDevicePrimaryCtxRelease_v2(device);
  return answered;
}

}  // namespace

OutOfMemoryMonitor::OutOfMemoryMonitor(pool::PoolRegistry& pools, attribution::Tracker& tracker,
                                       const python::PythonStacks* python,
                                       std::vector<std::string> socket_directories,
                                       ReportWriter write_report)
    : pools_(pools),
      tracker_(tracker),
      python_(python),
      socket_directories_(std::move(socket_directories)),
      write_report_(std::move(write_report)) {}

void OutOfMemoryMonitor::on_failure(const oom::FailedRequest& request) noexcept {
  // Gathering asks the driver (cuMemGetInfo) on the program's thread, inside a catch-all.
  const support::DeferredCancellation deferred;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const bool quiet = last_explained_ && now - *last_explained_ < kQuietPeriod;
    if (gathering_ || pending_ || explaining_ || quiet) {
      ++unexplained_failures_;
      return;
    }
    gathering_ = true;
  }
  std::optional<oom::OutOfMemoryFacts> facts;
  try {
    facts = gather(request);
  } catch (...) {
    // Out of host memory while gathering: this failure goes unexplained.
  }
  std::lock_guard<std::mutex> lock(mutex_);
  gathering_ = false;
  settled_.notify_all();
  if (!facts) return;
  facts->failures = unexplained_failures_ + 1;
  unexplained_failures_ = 0;
  pending_ = std::move(facts);
}

oom::OutOfMemoryFacts OutOfMemoryMonitor::gather(const oom::FailedRequest& request) {
  oom::OutOfMemoryFacts facts;
  facts.request = request;
  facts.time = unix_seconds();
  size_t free = 0, total = 0;
  if (device_mem_info(request.device, &free, &total)) {
    facts.device_free_bytes = free;
    facts.device_total_bytes = total;
  }
  for (const pool::DeviceStats& device : pools_.stats_by_device()) {
    if (device.device != request.device) continue;
    facts.in_use_bytes = device.stats.in_use_bytes;
    facts.cached_bytes = device.stats.cached_bytes;
    facts.reserved_bytes = device.stats.reserved_bytes;
    facts.limit_bytes = device.stats.limit_bytes;
    facts.direct_charged_bytes = device.stats.direct_in_use_bytes.value_or(0);
  }
  pool::PoolPicture picture = pools_.picture_of_device(request.device);
  facts.pool_free_bytes = picture.free_bytes;
  facts.pool_largest_free_block = picture.largest_free_block;
  facts.segments = std::move(picture.segments);
  // The failing device's sites, and its directly served bytes: a process driving several GPUs runs
  // out of each one's own memory.
  const attribution::Tracker::LiveLeaders leaders =
      tracker_.live_leaders(kLeadingSites, {request.device, /*device_memory_only=*/true});
  for (attribution::AllocationKind direct :
       {attribution::AllocationKind::kAsync, attribution::AllocationKind::kManaged,
        attribution::AllocationKind::kVmm}) {
    facts.direct_bytes += leaders.live_bytes_by_kind[static_cast<int>(direct)];
  }
  // Freed stream-ordered memory the driver's pools keep for this process (a release threshold set
  // high, as PyTorch's cudaMallocAsync backend and RMM do) is this process's too.
  const uint64_t live_async =
      leaders.live_bytes_by_kind[static_cast<int>(attribution::AllocationKind::kAsync)];
  const uint64_t stream_ordered = stream_ordered_reserved_bytes(request.device);
  if (stream_ordered > live_async) facts.direct_bytes += stream_ordered - live_async;
  for (const attribution::SiteFigures& site : leaders.sites) {
    facts.leading_sites.push_back({site.stack, site.kind, site.live_bytes, site.live_count});
  }
  facts.failing_stack = tracker_.stack_of_this_call();
  return facts;
}

std::optional<oom::OutOfMemoryFacts> OutOfMemoryMonitor::take_pending() {
  std::optional<oom::OutOfMemoryFacts> facts;
  std::lock_guard<std::mutex> lock(mutex_);
  facts.swap(pending_);
  if (facts) explaining_ = true;
  return facts;
}

void OutOfMemoryMonitor::explain_pending() noexcept {
  std::shared_ptr<oom::OutOfMemoryFacts> facts;
  try {
    std::optional<oom::OutOfMemoryFacts> pending = take_pending();
    if (!pending) return;
    facts = std::make_shared<oom::OutOfMemoryFacts>(std::move(*pending));
  } catch (...) {
    finish_explaining();  // out of host memory: this failure goes unexplained
    return;
  }
  // The monitor lives as long as the process (the runtime is never destroyed).
  oom::DetachedHelper helper(explanation_lane(), [this, facts] {
    explain(*facts);
    finish_explaining();
  });
  const oom::HelperOutcome outcome = helper.wait_until(oom::Clock::now());
  if (outcome == oom::HelperOutcome::kBusy || outcome == oom::HelperOutcome::kNoThread) {
    // No helper (or the previous one not yet gone, its explanation done): explained here, the
    // control thread silent meanwhile, as it was before helpers.
    explain(*facts);
    finish_explaining();
  }
}

void OutOfMemoryMonitor::explain(oom::OutOfMemoryFacts& facts) noexcept {
  try {
    oom::OtherProcessesQuery query;
    query.device = facts.request.device;
    query.socket_directories = socket_directories_;
    // Those made since the start, when another user took /tmp/vramshim-UID.
    for (std::string& fallback : control::fallback_socket_directories(::geteuid())) {
      query.socket_directories.push_back(std::move(fallback));
    }
    oom::OtherProcesses others = oom::find_other_processes(query);
    facts.other_processes = std::move(others.processes);
    facts.own_used_bytes = others.own_used_bytes;
    facts.unasked = std::move(others.unasked);
    oom::ExplanationLabels labels;
    std::vector<int32_t> labelled{facts.failing_stack};
    for (const oom::LeadingSite& site : facts.leading_sites) labelled.push_back(site.stack);
    const oom::FrameNames names = oom::frame_names_of(tracker_.stacks(), labelled);
    for (const oom::LeadingSite& site : facts.leading_sites) {
      labels.leading_sites.push_back(
          oom::site_label(tracker_.stacks(), python_, site.stack, names));
    }
    labels.failing_frames =
        oom::first_frames(tracker_.stacks(), python_, facts.failing_stack, kFailingFrames, names);
    if (first_report_.empty()) {
      first_report_ = write_report_(facts, &labels.report_error);
      labels.report_path = first_report_;
    } else {
      labels.report_path = first_report_ + " (the first failure's)";
    }
    if (control::log_level() >= control::LogLevel::kWarn) {
      write_to_stderr(oom::explain(facts, labels));
    }
  } catch (...) {
    control::log(control::LogLevel::kWarn, "out of memory on device %d (could not explain it)",
                 facts.request.device);
  }
}

void OutOfMemoryMonitor::finish_explaining() {
  std::lock_guard<std::mutex> lock(mutex_);
  explaining_ = false;
  last_explained_ = std::chrono::steady_clock::now();
  settled_.notify_all();
}

void OutOfMemoryMonitor::explain_at_exit() noexcept {
  {
    // A failure being gathered, or explained by the control thread, ends with its block and
    // report before the exit report, unless that takes longer than kExitWait.
    std::unique_lock<std::mutex> lock(mutex_);
    settled_.wait_for(lock, kExitWait, [this] { return !gathering_ && !explaining_; });
  }
  // Here, not on a helper: the exit report follows this block.
  if (std::optional<oom::OutOfMemoryFacts> facts = take_pending()) {
    explain(*facts);
    finish_explaining();
  }
  uint64_t unexplained = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    unexplained = unexplained_failures_;
    unexplained_failures_ = 0;
  }
  if (unexplained > 0) {
    control::log(control::LogLevel::kWarn,
                 "%llu more out-of-memory failures after the last explanation",
                 static_cast<unsigned long long>(unexplained));
  }
}

}  // namespace vramshim::runtime
