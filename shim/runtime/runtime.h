// The shim's composition root: one Runtime per process wires the hooks to the pools (shim/pool),
// the attribution tracker (shim/attribution), the report writer (shim/report) and the control
// thread (shim/control). It starts on the first hooked call, so a process that never touches CUDA
// gets no thread, no socket and no report.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim/attribution/allocation_kind.h"
#include "shim/attribution/event_trace.h"
#include "shim/attribution/site_history.h"
#include "shim/attribution/timeline_buffer.h"
#include "shim/attribution/tracker.h"
#include "shim/control/config.h"
#include "shim/control/control_thread.h"
#include "shim/control/exit_report_thread.h"
#include "shim/intercept/cuda_api.h"
#include "shim/pool/capture_state.h"
#include "shim/pool/direct_charges.h"
#include "shim/pool/pool_registry.h"
#include "shim/python/interpreter_symbols.h"
#include "shim/python/python_stacks.h"
#include "shim/report/report_writer.h"
#include "shim/runtime/out_of_memory_counts.h"
#include "shim/runtime/out_of_memory_monitor.h"
#include "shim/runtime/runtime_commands.h"
#include "shim/runtime/tracker_tagger.h"
#include "shim/runtime/vmm_mappings.h"

namespace vramshim::runtime {

class Runtime {
 public:
  // The running runtime, or nullptr when calls must pass straight through: VRAMSHIM_DISABLE=1, a
  // fork child, or a start that failed. Starts it on the first call.
  static Runtime* get() {
    Runtime* runtime = active_.load(std::memory_order_acquire);
    return runtime != nullptr ? runtime : start_once();
  }

  // Device memory from the pool of the current context (cuMemAlloc_v2, cuMemAllocPitch_v2).
  CUresult allocate(CUdeviceptr* dptr, size_t bytes, attribution::AllocationKind kind);
  // cuMemFree_v2: the owning pool takes it back, or the driver frees it.
  CUresult free(CUdeviceptr ptr);

  // Attribution of memory the driver serves directly (stream-ordered, managed, host, VMM, legacy),
  // on `device` (kCurrentDevice: the current context's).
  static constexpr int kCurrentDevice = -1;
  void track(uint64_t key, size_t bytes, attribution::AllocationKind kind, CUstream stream,
             int device = kCurrentDevice);
  // A free asked of the driver: the allocation's record and its limit's charge (see
  // charge_direct), taken out by untrack() before the driver's call (the driver may hand the key
  // out again as soon as it freed it), to settle_free() with its answer.
  struct PendingFree {
    std::optional<attribution::LiveAllocation> live;
    pool::DirectCharges::Charge charge;
  };
  [[nodiscard]] PendingFree untrack(uint64_t key);
  // Device memory the driver serves itself (stream-ordered, VMM) counts against VRAMSHIM_LIMIT:
  // `bytes` are charged to `device`'s limit (kCurrentDevice: the current context's) before the
  // driver's call; false when that would pass the cap, the failure noted as the limit's. `charge`
  // stays empty when no device is known. settle_direct() with the driver's answer.
  bool charge_direct(size_t bytes, attribution::AllocationKind kind, int device,
                     pool::DirectCharges::Charge* charge);
  void settle_direct(const pool::DirectCharges::Charge& charge, bool served, uint64_t key);
  // The driver freed `key` (its attribution and charge end) or refused: the memory stays
  // allocated, attributed and counted as before.
  void settle_free(const PendingFree& pending, bool freed, uint64_t key);

  pool::PoolRegistry& pools() { return pools_; }
  pool::CaptureState& capture() { return capture_; }
  VmmMappings& vmm_mappings() { return vmm_mappings_; }
  const control::Config& config() const { return config_; }
  const attribution::Tracker& tracker() const { return tracker_; }
  const python::InterpreterSymbols& interpreter() const { return interpreter_; }
  attribution::EventTrace& trace() { return trace_; }

  // The pool of the current context, created on first use; nullptr when there is no current
  // context or no room for another pool (the caller then passes the call through). `cache`
  // (optional): the calling thread's cache of that pool, or null when it has none.
  pool::CachingPool* current_pool(int* device = nullptr, pool::ThreadCache** cache = nullptr);

  // A door handed out a stream-creating function the shim does not hook, or a library's driver
  // calls bypass the hooks (`description` says which): warns once, and every pool fences with a
  // context synchronize from now on.
  void on_unhooked_stream_source(const char* description);

  // Primary context bookkeeping: a context's pool is dropped before the driver destroys it.
  void on_primary_retained(CUdevice device, CUcontext context);
  // The devices whose primary context the process holds now.
  std::vector<int> devices_with_primary_context();
  // cuCtxCreate (every version) made `context` on `device`.
  void on_context_created(CUdevice device, CUcontext context);
  // Before the driver's teardown calls: each drops the pool of the context the call destroys and
  // returns that context (nullptr when the call destroys none), for after_context_gone once the
  // driver has destroyed it.
  CUcontext before_primary_release(CUdevice device);
  CUcontext before_primary_reset(CUdevice device);
  void before_context_destroy(CUcontext context);
  // Whether `context` is a device's primary context: cuCtxDestroy is the driver's to refuse for it
  // (it is released, not destroyed), so its pool stays until the driver has destroyed it.
  bool is_primary_context(CUcontext context);
  // The driver destroyed `context`: the captures on its streams ended with it.
  void after_context_gone(CUcontext context);
  // cuCtxAttach added one to `context`'s usage count.
  void on_context_attached(CUcontext context);
  // Before cuCtxDetach(context): drops the context's pool when this detach will destroy it (a
  // created context, current on this thread, whose attaches were all detached).
  CUcontext before_context_detach(CUcontext context);
  // A green context holds a retain of its device's primary context, and runs a default stream the
  // primary context's legacy stream does not order.
  void on_green_context_created(CUgreenCtx green, CUdevice device);
  CUcontext before_green_context_destroy(CUgreenCtx green);

  // Writes a report now (reason: exit, signal, socket, cli, oom or crash). `path` empty:
  // VRAMSHIM_REPORT's pattern; for "oom" and "crash" its variant of that name
  // (report::report_variant), so they never replace another report. `out_of_memory` and `crash`
  // go into the report of those reasons. Returns the path written, or an error message in *error.
  // Reports are written one at a time, and none after the exit report has begun.
  std::string write_report(const char* reason, const std::string& path, std::string* error,
                           const oom::OutOfMemoryFacts* out_of_memory = nullptr,
                           const report::CrashDetails* crash = nullptr);

  // The hooks call it when they return CUDA_ERROR_OUT_OF_MEMORY to the program; the control thread
  // explains the failure (OutOfMemoryMonitor).
  void on_out_of_memory(const oom::FailedRequest& request) noexcept {
    out_of_memory_counts_.count(request.device);
    trace_.record(attribution::EventType::kOom, request.device, 0, request.bytes, 0, -1);
    oom::FailedRequest failed = request;
    failed.during_capture = capture_.active();
    oom_monitor_.on_failure(failed);
  }
  // The same for memory the driver serves directly, on the calling thread's current device.
  void on_out_of_memory_here(size_t bytes, attribution::AllocationKind kind,
                             int device = kCurrentDevice) noexcept;
  // The driver refused device memory of `kind`: the pools hand back their free segments, so that
  // the call can be made once more; returns whether any memory was handed back. The pool must
  // never be the reason an allocation fails: not the pool's own (`except`, on `device`: the other
  // pools of that device), nor one it does not serve (device -1: every device's pools, as a
  // stream-ordered, VMM or managed allocation may be another device's than the current one).
  // The driver's stream-ordered pools of `allocation_device` (kCurrentDevice: the current
  // context's) are trimmed too.
  bool release_pools_for(attribution::AllocationKind kind, int device = -1,
                         const pool::CachingPool* except = nullptr,
                         int allocation_device = kCurrentDevice);
  OutOfMemoryMonitor& oom_monitor() { return oom_monitor_; }
  const OutOfMemoryCounts& out_of_memory_counts() const { return out_of_memory_counts_; }
  // Python frames of stacks, for naming sites; null when the process runs no supported Python.
  const python::PythonStacks* python() const { return python_.get(); }
  // The rank and the job the environment named when the runtime started (report/process_info.h).
  const std::optional<std::string>& rank() const { return rank_; }
  const std::optional<std::string>& job() const { return job_; }

  // In-use and cached bytes summed over devices, for the timeline.
  void sample_timeline();
  // Every site's live bytes, for the site history (the control thread's tick).
  void sample_history();

 private:
  explicit Runtime(const control::Config& config);

  static Runtime* start_once();
  // The driver frees what no pool holds; its attribution ends first.
  CUresult free_unpooled(CUdeviceptr ptr);
  // The timeline's figures now: bytes in use, and `devices`' cached bytes summed.
  attribution::TimelineSample timeline_sample(const std::vector<pool::DeviceStats>& devices) const;
  // Tells `vramshim run` (VRAMSHIM_REPORT_NOTICES) that a report was written.
  void announce_report(const char* reason, const std::string& path);
  static void at_fork_child();
  static void at_exit();
  // The exit report (reason "exit"), after the out-of-memory failures not yet explained; logs
  // where it went, or why not. On exit_report_thread_, while the exiting thread waits (at_exit).
  void write_exit_report() noexcept;

  static std::atomic<Runtime*> active_;

  const control::Config config_;
  // Python frames in stacks (null: not a supported Python process, or VRAMSHIM_PYTHON=off), and the
  // interpreter's entry points for the deep flush. Both found once, when the runtime starts.
  const std::unique_ptr<python::PythonStacks> python_;
  const python::InterpreterSymbols interpreter_;
  pool::CaptureState capture_;
  VmmMappings vmm_mappings_;
  pool::DirectCharges direct_charges_;
  attribution::Tracker tracker_;
  attribution::EventTrace trace_;
  const std::unique_ptr<attribution::SiteHistory> history_;  // null: VRAMSHIM_HISTORY=off
  std::vector<uint64_t> history_scratch_;                    // the control thread's
  TrackerTagger tagger_;
  pool::PoolRegistry pools_;
  attribution::TimelineBuffer timeline_;
  OutOfMemoryMonitor oom_monitor_;
  OutOfMemoryCounts out_of_memory_counts_;
  RuntimeCommands commands_;
  control::ControlThread control_;
  control::ExitReportThread exit_report_thread_;
  const std::optional<std::string> rank_;
  const std::optional<std::string> job_;
  std::atomic<uint64_t> report_sequence_{0};
  std::mutex report_mutex_;
  bool exiting_ = false;          // the exit report has begun; guarded by report_mutex_
  std::string exit_report_path_;  // where it went, once written; guarded by report_mutex_

  std::mutex primary_mutex_;
  struct PrimaryContext {
    CUcontext context = nullptr;
    int retains = 0;
  };
  static constexpr int kMaxDevices = 64;
  PrimaryContext primary_[kMaxDevices];
  bool is_primary_locked(CUcontext context) const;           // primary_mutex_ held
  std::unordered_map<CUgreenCtx, CUdevice> green_contexts_;  // each one's device; primary_mutex_
  // Created contexts' cuCtxAttach calls not yet detached; primary_mutex_.
  std::unordered_map<CUcontext, int> context_attaches_;
};

}  // namespace vramshim::runtime
