#include "shim/runtime/runtime.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "shim/control/control_signals.h"
#include "shim/control/fatal_signals.h"
#include "shim/control/log.h"
#include "shim/control/socket_path.h"
#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/internal_failure.h"
#include "shim/intercept/unhooked_stream_source.h"
#include "shim/oom/detached_helper.h"
#include "shim/pool/size_policy.h"
#include "shim/report/atomic_file.h"
#include "shim/report/process_info.h"
#include "shim/report/report_pattern.h"
#include "shim/report/report_writer.h"
#include "shim/runtime/call_summary.h"
#include "shim/runtime/device_figures.h"
#include "shim/runtime/driver_device_api.h"
#include "shim/runtime/thread_cache_list.h"
#include "shim/support/deferred_cancellation.h"
#include "shim/support/write_without_sigpipe.h"

namespace vramshim::runtime {

std::atomic<Runtime*> Runtime::active_{nullptr};

namespace {

using control::LogLevel;

constexpr uint64_t kTimelineIntervalMs = 100;
constexpr size_t kTimelineCapacity = 4096;
// How long exit() waits for an exit report that writes nothing more (Runtime::at_exit).
constexpr std::chrono::milliseconds kExitReportStall{10000};

// Without the exit report's thread: runs `write` (the exit report) on a helper thread and waits for
// it while reports are being written: false once nothing was written for kExitReportStall (the
// helper is left to finish or hang alone), or when the previous exit report's helper still runs.
// Without a thread, it runs here.
bool written_while_progressing(const std::function<void()>& write) {
  static oom::HelperLane lane;
  oom::DetachedHelper helper(lane, write);
  for (;;) {
    const uint64_t before = report::bytes_written_by_reports();
    switch (helper.wait_until(oom::Clock::now() + kExitReportStall)) {
      case oom::HelperOutcome::kFinished:
        return true;
      case oom::HelperOutcome::kNoThread:
        write();
        return true;
      case oom::HelperOutcome::kBusy:
        return false;
      case oom::HelperOutcome::kTimedOut:
        if (report::bytes_written_by_reports() == before) return false;
    }
  }
}

// The last context this thread allocated in, its device and its pool: saves a driver call and the
// registry's probe per allocation. Invalidated by any context teardown (a new context may reuse
// the address, and gets a new pool): the epoch is odd while a teardown removes a pool, and a pool
// is kept only when the epoch was even and unchanged across its lookup.
std::atomic<uint64_t> g_context_epoch{0};
std::mutex g_context_teardown_mutex;  // one teardown at a time, so that even means none
struct ContextDevice {
  CUcontext context = nullptr;
  int device = 0;
  uint64_t epoch = 0;
  pool::CachingPool* pool = nullptr;   // null until found with a stable epoch
  pool::ThreadCache* cache = nullptr;  // the thread's cache of `pool`, once looked for
  bool cache_looked_for = false;
};
thread_local ContextDevice t_context_device;

// The calling thread's current context and its device; null without one.
ContextDevice* current_context() {
  CUcontext context = nullptr;
  if (real::cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return nullptr;
  ContextDevice& cached = t_context_device;
  const uint64_t epoch = g_context_epoch.load(std::memory_order_acquire);
  if (cached.context != context || cached.epoch != epoch) {
    CUdevice device = 0;
    if (real::cuCtxGetDevice(&device) != CUDA_SUCCESS) return nullptr;
    cached = {context, device, epoch, nullptr, nullptr, false};
  }
  return &cached;
}

// `device`, or for Runtime::kCurrentDevice the device of the calling thread's current context;
// none without one.
std::optional<int> device_or_current(int device) {
  if (device != Runtime::kCurrentDevice) return device;
  const ContextDevice* current = current_context();
  if (current == nullptr) return std::nullopt;
  return current->device;
}

// Keeps `pool` with the thread's context when no teardown overlapped finding it.
void remember_pool(ContextDevice& cached, pool::CachingPool* pool) {
  if (cached.epoch % 2 == 0 && g_context_epoch.load(std::memory_order_acquire) == cached.epoch) {
    cached.pool = pool;
  }
}

// What the hooks keep per thread, together (one TLS address for all a hook reads):
// - the pool this thread allocated from last, and its cache of it (null: none): a free usually
//   returns a block to it, and trying it first saves the driver call that finds the current
//   context. Pools are never destroyed (a dropped one is empty, so it does not own the pointer);
// - the termination signal held while the thread holds the shim's locks
//   (control::TerminationHold).
// Zero-initialized.
struct HookThreadState {
  pool::CachingPool* last_pool;
  pool::ThreadCache* last_cache;
  control::HeldTermination termination;
};
thread_local HookThreadState t_hook;

pthread_key_t g_thread_caches_key;
bool g_thread_caches_key_made = false;

// Set in a fork child: its shim stays inert and never takes the start lock, which a thread of the
// parent may have held at the fork.
std::atomic<bool> g_inert_after_fork{false};

void forget_cache(pool::ThreadCache* cache) {
  if (t_hook.last_cache == cache) t_hook.last_cache = nullptr;
  if (t_context_device.cache == cache) t_context_device = ContextDevice{};
}

// The calling thread's caches (null until its first), given back to their pools at thread exit
// through a thread-specific key (a thread-local with a destructor costs a guard and a call at every
// access). Plain pointers: each cache lives as long as the process, and only this thread gives it
// back. On the heap: in TLS the list (264 B) put the shim's thread-locals over glibc's 512 B of
// static TLS kept for libraries loaded later (rtld.optional_static_tls), and every hook of a shim
// that is dlopen'ed (as bench/shim does) paid for dynamic TLS: the pool-hit pair 15 % slower.
thread_local ThreadCacheList* t_cache_list;

void give_back_thread_caches(void*) {
  if (g_inert_after_fork.load(std::memory_order_acquire)) return;
  ThreadCacheList* mine = t_cache_list;
  if (mine == nullptr) return;
  t_cache_list = nullptr;
  // A failed pool keeps what the caches hold (their locks may be held).
  if (intercept::internal_failure_seen()) mine->count = 0;
  for (int i = 0; i < mine->count; ++i) {
    pool::ThreadCache* cache = mine->caches[i];
    forget_cache(cache);
    try {  // at thread exit, outside any hook
      cache->pool()->close_thread_cache(*cache);
    } catch (const std::exception& e) {
      intercept::note_internal_failure("a thread's exit", e.what());
      break;
    }
  }
  delete mine;
}

// The calling thread's cache of `pool`, opened on first use; null when it gets none.
pool::ThreadCache* thread_cache_of(pool::CachingPool* pool) {
  static pthread_once_t key_once = PTHREAD_ONCE_INIT;
  pthread_once(&key_once, [] {
    g_thread_caches_key_made =
        pthread_key_create(&g_thread_caches_key, &give_back_thread_caches) == 0;
  });
  // Without the key a cache would outlive its thread, holding blocks until a flush.
  if (!g_thread_caches_key_made) return nullptr;
  ThreadCacheList* mine = t_cache_list;
  if (mine == nullptr) {
    mine = new (std::nothrow) ThreadCacheList{};
    if (mine == nullptr) return nullptr;
    t_cache_list = mine;
    // Any non-null value: the key's destructor gives back this thread's caches.
    pthread_setspecific(g_thread_caches_key, mine);
  }
  if (pool::ThreadCache* cache = mine->find(pool)) return cache;
  if (pool::ThreadCache* oldest = mine->take_least_recently_used()) {
    forget_cache(oldest);
    oldest->pool()->close_thread_cache(*oldest);
  }
  pool::ThreadCache* cache = pool->open_thread_cache();
  if (cache == nullptr) return nullptr;
  mine->add(pool, cache);
  return cache;
}

pool::PoolOptions pool_options(const control::Config& config) {
  pool::PoolOptions options;
  options.enabled = config.pool;
  options.thread_caches = config.thread_cache;
  options.limit_bytes = config.limit_bytes;
  options.max_cached_bytes = config.max_cached_bytes;
  if (config.idle_release_seconds) {
    options.idle_release = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(*config.idle_release_seconds));
  }
  return options;
}

// The runtime's Python stacks, for the tracker's stack rewriter (a plain function pointer), and the
// object the interpreter's code lies in (set before the stacks are published).
std::atomic<python::PythonStacks*> g_python_stacks{nullptr};
attribution::ModuleRange g_interpreter_module;

// Whether the calling thread may be running Python code: a thread whose whole native stack holds
// no frame of the interpreter runs none, and the thread state its gilstate slot names may then be
// another thread's to run (PyThreadState_New binds a new state to the thread that made it, and an
// embedder may hand it to a worker): frames another thread pushes and frees must not be read.
bool may_run_python(const uint64_t* native, int depth, bool whole) {
  if (!whole || g_interpreter_module.begin == g_interpreter_module.end) return true;
  return std::any_of(native, native + depth,
                     [](uint64_t frame) { return g_interpreter_module.contains(frame); });
}

// A stack with Python frames is cut only where Python frames were left out: the native frames
// that give way to them, or lie past the depth, are the interpreter's and the program's start,
// whereas the Python frames name the program's code.
attribution::RewrittenStack merge_python_frames(const attribution::StackCapture::Frames& native,
                                                uint64_t* out, int max_depth) {
  python::PythonStacks* stacks = g_python_stacks.load(std::memory_order_acquire);
  if (stacks != nullptr && may_run_python(native.frames, native.depth, native.whole)) {
    const python::MergedStack merged =
        stacks->hybrid_stack(native.frames, native.depth, out, max_depth);
    return {merged.frames, merged.python_frames > 0 ? merged.python_left_out : native.cut};
  }
  const int kept = std::min(native.depth, max_depth);
  std::copy(native.frames, native.frames + kept, out);
  return {kept, native.cut || kept < native.depth};
}

attribution::TrackerOptions tracker_options(const control::Config& config, bool python) {
  attribution::TrackerOptions options;
  options.stacks = config.stacks;
  options.sample_bytes = config.sample_bytes;
  options.stack_depth = static_cast<int>(config.stack_depth);
  options.stack_table_bytes = config.stack_table_bytes;
  // Without stacks libunwind is not even loaded (its start opens a pipe: stack_capture.h).
  options.unwinder = config.stacks == attribution::StackMode::kOff
                         ? attribution::Unwinder::kLibgcc
                         : attribution::preferred_unwinder();
  options.own_module = attribution::ModuleRange::of_this_module();
  if (python) options.rewrite_stack = &merge_python_frames;
  return options;
}

double unix_now() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// The job the environment names, or none with one warning line when its value is unusable.
std::optional<std::string> job_or_warning() {
  const report::JobFromEnvironment found = report::job_from_environment();
  if (!found.problem.empty()) control::log(LogLevel::kWarn, "%s", found.problem.c_str());
  return found.job;
}

// `config` with a relative report pattern made absolute now, at the start, as VRAMSHIM_SOCKET is: a
// program that changes directory later still reports where it started. A rank that %r cannot put
// in a path is named once here; %r is left empty.
control::Config with_report_pattern_from_start(const control::Config& config) {
  control::Config resolved = config;
  resolved.report_pattern = report::absolute_report_pattern(config.report_pattern);
  const std::optional<std::string> rank = report::rank_from_environment();
  if (config.report_enabled && rank && !report::is_safe_rank(*rank) &&
      config.report_pattern.find("%r") != std::string::npos) {
    control::log(LogLevel::kWarn,
                 "the rank is not a plain name (letters, digits, '-', '_', '.'): %%r in "
                 "VRAMSHIM_REPORT is left empty");
  }
  return resolved;
}

// A start that re-enters itself on the same thread (a hook called while the runtime is built)
// passes the call through instead of deadlocking.
thread_local bool t_starting = false;

// glibc unwinds a thread it ends inside the shim (pthread_exit, a cancellation) with libgcc_s, and
// at a shim frame with a destructor the shim's static C++ runtime sets registers through its own
// static unwinder, whose table of register sizes is filled only when it first unwinds: empty, it
// aborts the process (docs/design.md, "Interception rules"). One step of a walk fills it.
void fill_static_unwinder_tables() {
  _Unwind_Backtrace([](_Unwind_Context*, void*) { return _URC_END_OF_STACK; }, nullptr);
}

// The registry has a slot for each context with a pool: while all are taken, a new context's memory
// goes to the driver, unpooled. Said once.
void warn_pool_table_full() {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  control::log(LogLevel::kWarn,
               "the process has more than %zu CUDA contexts at once; the memory of a context made "
               "while that many live is not pooled (it goes to the driver as without the shim)",
               pool::PoolRegistry::kMaxContexts);
}

}  // namespace

control::HeldTermination& termination_of_this_thread() { return t_hook.termination; }

Runtime::Runtime(const control::Config& config)
    : config_(with_report_pattern_from_start(config)),
      python_(config.python ? python::PythonStacks::create(config.stack_table_bytes) : nullptr),
      interpreter_(python::find_interpreter_symbols()),
      tracker_(tracker_options(config, python_ != nullptr)),
      trace_(static_cast<size_t>(config.trace_events)),
      history_(config.history_bytes > 0
                   ? std::make_unique<attribution::SiteHistory>(config.history_bytes)
                   : nullptr),
      tagger_(tracker_, trace_),
      pools_(pool_options(config), capture_, &tagger_),
      timeline_(kTimelineIntervalMs, kTimelineCapacity),
      oom_monitor_(pools_, tracker_, python_.get(),
                   control::socket_directories(config.runtime_dir, ::geteuid()),
                   [this](const oom::OutOfMemoryFacts& facts, std::string* error) {
                     return write_report("oom", "", error, &facts);
                   }),
      commands_(*this),
      rank_(report::rank_from_environment()),
      job_(job_or_warning()) {
  if (python_ != nullptr) {
    g_interpreter_module = attribution::ModuleRange::containing(
        reinterpret_cast<const void*>(python_->symbols().Py_IsInitialized));
  }
  g_python_stacks.store(python_.get(), std::memory_order_release);
  control::set_termination_holds([] { return &termination_of_this_thread(); });
}

Runtime* Runtime::start_once() {
  static std::mutex start_mutex;
  static bool attempted = false;
  // The process that took the start lock: a child forked while a thread of its parent held it would
  // wait for it for ever (the fork handler, registered once the runtime exists, cannot cover a fork
  // during the start), so a child finds its parent's pid here and stays inert.
  static std::atomic<pid_t> starting_process{0};
  if (t_starting || g_inert_after_fork.load(std::memory_order_acquire)) return nullptr;
  pid_t starter = 0;
  if (!starting_process.compare_exchange_strong(starter, ::getpid(), std::memory_order_acq_rel) &&
      starter != ::getpid()) {
    return nullptr;
  }
  t_starting = true;
  Runtime* runtime = nullptr;
  {
    // Starting reads the environment, makes the socket and starts threads: cancellation points.
    const support::DeferredCancellation deferred;
    fill_static_unwinder_tables();
    std::lock_guard<std::mutex> lock(start_mutex);
    runtime = active_.load(std::memory_order_acquire);
    if (runtime == nullptr && !attempted) {
      attempted = true;
      try {
        const control::Config config = control::load_config_from_environment();
        if (!config.disable) {
          // Never destroyed: threads may still allocate while the process exits.
          runtime = new Runtime(config);
          pthread_atfork(nullptr, nullptr, &Runtime::at_fork_child);
          std::atexit(&Runtime::at_exit);
          std::at_quick_exit(&Runtime::at_exit);
          intercept::set_unhooked_stream_source_listener([](const char* description) {
            Runtime* active = active_.load(std::memory_order_acquire);
            if (active == nullptr) return;
            try {  // called from the dlsym, dlopen and cuGetProcAddress doors
              active->on_unhooked_stream_source(description);
            } catch (const std::exception& e) {
              intercept::note_internal_failure("a stream source without a hook", e.what());
            }
          });
          if (const char* description = intercept::first_unhooked_stream_source()) {
            runtime->on_unhooked_stream_source(description);
          }
          runtime->control_.start(runtime->config_, runtime->commands_);
          runtime->exit_report_thread_.start([runtime] { runtime->write_exit_report(); });
          active_.store(runtime, std::memory_order_release);
        }
      } catch (const std::exception& e) {
        control::log(LogLevel::kWarn, "could not start (%s); passing every call through", e.what());
        runtime = nullptr;
      }
    }
  }
  t_starting = false;
  return runtime;
}

void Runtime::at_fork_child() {
  const support::DeferredCancellation deferred;  // closing descriptors: cancellation points
  g_inert_after_fork.store(true, std::memory_order_release);
  Runtime* runtime = active_.exchange(nullptr, std::memory_order_acq_rel);
  if (runtime == nullptr) return;
  runtime->control_.reset_after_fork_in_child();
  control::give_control_signals_back();
  runtime->pools_.reset_after_fork();
  runtime->capture_.reset();
}

void Runtime::write_exit_report() noexcept {
  try {  // an exit handler: an exception would end a job that succeeded with std::terminate
    // A failure the control thread has not explained yet is explained before the report.
    oom_monitor_.explain_at_exit();
    if (!config_.report_enabled) return;
    std::string error;
    const std::string path = write_report("exit", "", &error);
    if (error.empty()) {
      control::log(LogLevel::kInfo, "report written to %s", path.c_str());
    } else {
      control::log(LogLevel::kWarn, "no exit report: %s", error.c_str());
    }
  } catch (const std::exception& e) {
    control::log(LogLevel::kWarn, "no exit report: %s", e.what());
  }
}

void Runtime::at_exit() {
  Runtime* runtime = active_.load(std::memory_order_acquire);
  if (runtime == nullptr) return;
  // Writing the report and stopping the control thread meet cancellation points: a thread that
  // calls exit() with a cancellation pending would end there, without its report.
  const support::DeferredCancellation deferred;
  // Written by a thread of its own while this one waits, nothing allocated or locked here (see
  // control::ExitReportThread).
  control::ExitReportOutcome outcome = runtime->exit_report_thread_.write_report(
      &report::bytes_written_by_reports, kExitReportStall);
  if (outcome == control::ExitReportOutcome::kNoThread) {
    outcome = written_while_progressing([runtime] { runtime->write_exit_report(); })
                  ? control::ExitReportOutcome::kWritten
                  : control::ExitReportOutcome::kStalled;
  }
  if (outcome == control::ExitReportOutcome::kStalled) {
    control::log(LogLevel::kWarn,
                 "no exit report: nothing written for %lld s (exit() called while this thread "
                 "held the shim's locks, from a signal handler? or a file system that stopped "
                 "answering)",
                 static_cast<long long>(kExitReportStall.count() / 1000));
  }
  runtime->control_.stop_at_exit(500);
}

pool::CachingPool* Runtime::current_pool(int* device, pool::ThreadCache** cache) {
  ContextDevice* current = current_context();
  if (current == nullptr) return nullptr;
  const CUcontext context = current->context;
  const int context_device = current->device;
  if (device != nullptr) *device = context_device;
  // After an internal failure a pool may be half-updated: no hook uses one any more.
  if (intercept::internal_failure_seen()) return nullptr;
  pool::CachingPool* pool = current->pool;
  if (pool == nullptr) {
    pool = pools_.find(context);
    if (pool == nullptr) {
      pool = pools_.find_or_create(context, context_device, [&] {
        return std::make_unique<DriverDeviceApi>(context, context_device, trace_, capture_);
      });
      if (pool == nullptr) warn_pool_table_full();
    }
    if (pool == nullptr) return nullptr;
    remember_pool(*current, pool);
  }
  pool::ThreadCache* mine = current->cache;
  if (!current->cache_looked_for && current->pool == pool) {
    mine = current->cache = thread_cache_of(pool);
    current->cache_looked_for = true;
  }
  t_hook.last_pool = pool;
  t_hook.last_cache = mine;
  if (cache != nullptr) *cache = mine;
  return pool;
}

CUresult Runtime::allocate(CUdeviceptr* dptr, size_t bytes, attribution::AllocationKind kind) {
  const control::TerminationHold hold(t_hook.termination);  // the exit report needs the locks here
  int device = 0;
  pool::ThreadCache* cache = nullptr;
  pool::CachingPool* pool = current_pool(&device, &cache);
  if (pool == nullptr) {
    const support::DeferredCancellation deferred;
    auto allocate_here = [&] {
      const control::TerminationRelease released(t_hook.termination);  // no lock of the shim's held
      return real::cuMemAlloc_v2(dptr, bytes);
    };
    CUresult result = allocate_here();
    if (result == CUDA_ERROR_OUT_OF_MEMORY && release_pools_for(kind, device)) {
      result = allocate_here();
    }
    if (result == CUDA_SUCCESS) track(*dptr, bytes, kind, nullptr);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) on_out_of_memory({bytes, kind, device});
    return result;
  }
  // Attributed by the pool's tagger: the site's tag lives in the pool's block.
  pool::OutOfMemoryCause cause = pool::OutOfMemoryCause::kDriver;
  const uint64_t request = tracker_.prepare(pool::SizePolicy::round(bytes), kind);
  CUresult result = pool->allocate(bytes, dptr, request, &cause, cache);
  // The pool released its own cache before it gave up; the device's other pools hold theirs.
  if (result == CUDA_ERROR_OUT_OF_MEMORY && cause == pool::OutOfMemoryCause::kDriver &&
      release_pools_for(kind, device, pool)) {
    result = pool->allocate(bytes, dptr, request, &cause, cache);
  }
  if (result == CUDA_ERROR_OUT_OF_MEMORY) on_out_of_memory({bytes, kind, device, cause});
  return result;
}

CUresult Runtime::free(CUdeviceptr ptr) {
  const control::TerminationHold hold(t_hook.termination);
  if (ptr == 0) return free_unpooled(ptr);
  if (intercept::internal_failure_seen()) {
    // What a pool holds stays held: the driver would free a whole segment, and the pool may be
    // half-updated (its thread caches' locks too).
    if (pools_.in_some_segment(ptr)) return CUDA_SUCCESS;
    return free_unpooled(ptr);
  }
  pool::CachingPool* last = t_hook.last_pool;
  if (last != nullptr) {
    const pool::FreeResult result = last->free(ptr, t_hook.last_cache);
    if (result.owned) return result.status;
  }
  pool::ThreadCache* cache = nullptr;
  pool::CachingPool* pool = current_pool(nullptr, &cache);
  if (pool != nullptr && pool != last) {
    const pool::FreeResult result = pool->free(ptr, cache);
    if (result.owned) return result.status;
  }
  // Freed while another context is current: its own pool must take it back (or refuse it), or the
  // driver would free a block carved out of a pool segment, or the whole segment.
  if (pool::CachingPool* owner = pools_.find_holder(ptr)) {
    const pool::FreeResult result = owner->free(ptr);
    if (result.owned) return result.status;
  }
  // Not the pools': an allocation made while no pool could serve it (no current context).
  return free_unpooled(ptr);
}

CUresult Runtime::free_unpooled(CUdeviceptr ptr) {
  const support::DeferredCancellation deferred;  // a cancellation would leave it untracked, unfreed
  const PendingFree pending = ptr != 0 ? untrack(ptr) : PendingFree{};
  CUresult result = CUDA_SUCCESS;
  {
    const control::TerminationRelease released(t_hook.termination);  // a free waits for the device
    result = real::cuMemFree_v2(ptr);
  }
  settle_free(pending, result == CUDA_SUCCESS, ptr);
  return result;
}

bool Runtime::release_pools_for(attribution::AllocationKind kind, int device,
                                const pool::CachingPool* except, int allocation_device) {
  if (kind == attribution::AllocationKind::kHost) return false;  // not the GPU's memory
  uint64_t released = pools_.release_for_out_of_memory(device, except);
  // So does the freed memory the driver's stream-ordered pools of the current device keep (a
  // release threshold set high), as a flush trims them; a program that makes no cuMemAlloc has no
  // pool of the shim's to do it.
  if (!capture_.active() && config_.pool) {
    if (const std::optional<int> trimmed = device_or_current(allocation_device)) {
      released += trim_stream_ordered_pools_of(*trimmed);
    }
  }
  return released > 0;
}

void Runtime::on_out_of_memory_here(size_t bytes, attribution::AllocationKind kind,
                                    int device) noexcept {
  if (kind == attribution::AllocationKind::kHost) return;  // not the GPU's memory
  on_out_of_memory({bytes, kind, device_or_current(device).value_or(0)});
}

void Runtime::track(uint64_t key, size_t bytes, attribution::AllocationKind kind, CUstream stream,
                    int device) {
  const control::TerminationHold hold(t_hook.termination);
  device = device_or_current(device).value_or(0);
  tracker_.on_alloc(key, bytes, kind, device, reinterpret_cast<uint64_t>(stream));
  if (trace_.enabled()) {
    const std::optional<attribution::LiveAllocation> live = tracker_.find(key);
    trace_.record(attribution::EventType::kAlloc, device, key, bytes,
                  reinterpret_cast<uint64_t>(stream), live ? static_cast<int32_t>(live->site) : -1);
  }
}

Runtime::PendingFree Runtime::untrack(uint64_t key) {
  const control::TerminationHold hold(t_hook.termination);
  if (trace_.enabled()) {
    if (const std::optional<attribution::LiveAllocation> live = tracker_.find(key)) {
      trace_.record(attribution::EventType::kFree, live->device, key, live->size, live->stream,
                    static_cast<int32_t>(live->site));
    }
  }
  return {tracker_.take(key), direct_charges_.take(key)};
}

bool Runtime::charge_direct(size_t bytes, attribution::AllocationKind kind, int device,
                            pool::DirectCharges::Charge* charge) {
  const control::TerminationHold hold(t_hook.termination);
  const std::optional<int> resolved = device_or_current(device);
  if (!resolved) return true;  // no device: the driver answers for the call
  pool::DeviceLimit* limit = pools_.limit_of(*resolved);
  if (limit == nullptr) {
    // A device the driver does not know gets no figures: the driver refuses the call.
    CUdevice known = 0;
    if (real::cuDeviceGet(&known, *resolved) != CUDA_SUCCESS) return true;
    limit = pools_.make_limit_of(*resolved);
    if (limit == nullptr) return true;
  }
  if (pool::DirectCharges::charge(*limit, bytes, charge)) return true;
  // Bytes freed to thread caches count as in use until folded back, as before a pool's charge.
  pools_.fold_device_caches(*resolved);
  if (pool::DirectCharges::charge(*limit, bytes, charge)) return true;
  if (!limit->get()) return true;  // no cap: a size that would wrap the count goes uncounted
  on_out_of_memory({bytes, kind, *resolved, pool::OutOfMemoryCause::kLimit});
  return false;
}

void Runtime::settle_direct(const pool::DirectCharges::Charge& charge, bool served, uint64_t key) {
  const control::TerminationHold hold(t_hook.termination);
  direct_charges_.settle(charge, served, key);
}

void Runtime::settle_free(const PendingFree& pending, bool freed, uint64_t key) {
  if (!pending.live && pending.charge.limit == nullptr) return;
  const control::TerminationHold hold(t_hook.termination);
  if (freed) {
    if (pending.live) tracker_.end_free(*pending.live);
    pool::DirectCharges::give_back(pending.charge);
    return;
  }
  if (pending.live) {
    tracker_.restore(*pending.live);
    // The trace recorded its free before the driver's call: it is allocated again from now.
    if (trace_.enabled()) {
      if (const std::optional<attribution::LiveAllocation> live = tracker_.find(key)) {
        trace_.record(attribution::EventType::kAlloc, live->device, key, live->size, live->stream,
                      static_cast<int32_t>(live->site));
      }
    }
  }
  direct_charges_.settle(pending.charge, true, key);
}

void Runtime::on_unhooked_stream_source(const char* description) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    control::log(LogLevel::kWarn, "%s; the pool now fences freed memory with a context synchronize",
                 description);
  }
  pools_.on_unfenceable_stream();
}

void Runtime::on_primary_retained(CUdevice device, CUcontext context) {
  if (device < 0 || device >= kMaxDevices) return;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    primary_[device].context = context;
    ++primary_[device].retains;
  }
  pools_.add_context(context, device);
}

std::vector<int> Runtime::devices_with_primary_context() {
  std::vector<int> devices;
  std::lock_guard<std::mutex> lock(primary_mutex_);
  for (int device = 0; device < kMaxDevices; ++device) {
    if (primary_[device].retains > 0) devices.push_back(device);
  }
  return devices;
}

void Runtime::on_context_created(CUdevice device, CUcontext context) {
  if (device < 0 || device >= kMaxDevices) return;
  pools_.add_context(context, device);
}

CUcontext Runtime::before_primary_release(CUdevice device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  CUcontext last = nullptr;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    PrimaryContext& primary = primary_[device];
    if (primary.retains > 0 && --primary.retains == 0) last = primary.context;
  }
  if (last != nullptr) before_context_destroy(last);
  return last;
}

void Runtime::on_green_context_created(CUgreenCtx green, CUdevice device) {
  if (device < 0 || device >= kMaxDevices) return;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    ++primary_[device].retains;
    try {
      green_contexts_.emplace(green, device);
    } catch (const std::bad_alloc& error) {
      // Its release would go unseen, and the pool outlive the context: the pools stop instead.
      intercept::note_internal_failure("cuGreenCtxCreate", error.what());
    }
  }
  pools_.on_unfenceable_stream();
}

CUcontext Runtime::before_green_context_destroy(CUgreenCtx green) {
  CUdevice device = -1;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    const auto found = green_contexts_.find(green);
    if (found == green_contexts_.end()) return nullptr;
    device = found->second;
    green_contexts_.erase(found);
  }
  return before_primary_release(device);
}

CUcontext Runtime::before_primary_reset(CUdevice device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    context = primary_[device].context;
  }
  if (context != nullptr) before_context_destroy(context);
  return context;
}

bool Runtime::is_primary_context(CUcontext context) {
  std::lock_guard<std::mutex> lock(primary_mutex_);
  return is_primary_locked(context);
}

bool Runtime::is_primary_locked(CUcontext context) const {
  return context != nullptr && std::any_of(std::begin(primary_), std::end(primary_),
                                           [context](const PrimaryContext& primary) {
                                             return primary.context == context;
                                           });
}

void Runtime::after_context_gone(CUcontext context) {
  if (context != nullptr && capture_.on_context_gone(context) > 0 && !capture_.active()) {
    pools_.after_captures_end();
  }
}

void Runtime::on_context_attached(CUcontext context) {
  std::lock_guard<std::mutex> lock(primary_mutex_);
  try {
    ++context_attaches_[context];
  } catch (const std::bad_alloc& error) {
    // Its detaches would be miscounted, and a pool dropped under a live context: the pools stop.
    intercept::note_internal_failure("cuCtxAttach", error.what());
  }
}

CUcontext Runtime::before_context_detach(CUcontext context) {
  // The driver refuses a detach of a context that is not current, and of a primary context.
  CUcontext current = nullptr;
  if (real::cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != context) return nullptr;
  {
    std::lock_guard<std::mutex> lock(primary_mutex_);
    if (is_primary_locked(context)) return nullptr;
    const auto attached = context_attaches_.find(context);
    if (attached != context_attaches_.end()) {
      if (--attached->second == 0) context_attaches_.erase(attached);
      return nullptr;
    }
  }
  before_context_destroy(context);
  return context;
}

void Runtime::before_context_destroy(CUcontext context) {
  {
    // A context made later at the same handle starts with no attaches.
    std::lock_guard<std::mutex> lock(primary_mutex_);
    context_attaches_.erase(context);
  }
  std::lock_guard<std::mutex> teardown(g_context_teardown_mutex);
  g_context_epoch.fetch_add(1, std::memory_order_acq_rel);
  pools_.remove(context);
  g_context_epoch.fetch_add(1, std::memory_order_acq_rel);
}

std::string Runtime::write_report(const char* reason, const std::string& path, std::string* error,
                                  const oom::OutOfMemoryFacts* out_of_memory,
                                  const report::CrashDetails* crash) {
  error->clear();
  // One report at a time; once the exit report has begun, it is the last word.
  std::lock_guard<std::mutex> serialized(report_mutex_);
  const bool exit_report = std::strcmp(reason, "exit") == 0;
  if (exiting_) {
    // An exit report asked for again (a termination signal while the program exits, or the
    // program exiting after one) is the one written by now (it held the mutex).
    if (exit_report && !exit_report_path_.empty()) return exit_report_path_;
    *error = "the process is exiting; its exit report is the last one";
    return "";
  }
  if (exit_report) exiting_ = true;
  report::ReportInputs inputs;
  inputs.reason = reason;
  if (crash != nullptr) inputs.crash = *crash;
  inputs.process = report::read_process_info(rank_);
  std::string target = path;
  if (target.empty()) {
    if (!config_.report_enabled) {
      *error = "reports are off (VRAMSHIM_REPORT=off); give a path";
      return "";
    }
    inputs.sequence = report_sequence_.fetch_add(1, std::memory_order_relaxed);
    target = report::expand_report_pattern(
        config_.report_pattern, {inputs.process.pid, inputs.process.host, rank_.value_or("0"),
                                 static_cast<uint64_t>(time(nullptr)), inputs.sequence});
    if (out_of_memory != nullptr) target = report::report_variant(target, "oom");
    if (crash != nullptr && !crash->termination) target = report::report_variant(target, "crash");
  }
  inputs.out_of_memory = out_of_memory;
  inputs.config.pool = config_.pool;
  inputs.config.stacks = config_.stacks;
  inputs.config.sample_bytes = config_.sample_bytes;
  inputs.config.stack_depth = static_cast<int>(config_.stack_depth);
  inputs.config.limit_bytes = pools_.limit();
  inputs.config.max_cached_bytes = config_.max_cached_bytes;
  const std::vector<pool::DeviceStats> devices = pools_.stats_by_device();
  for (const pool::DeviceStats& device : devices) {
    inputs.devices.push_back({device.device, device_figure_list(device.stats)});
  }
  inputs.tracker = &tracker_;
  inputs.timeline = &timeline_;
  inputs.timeline_end = timeline_sample(devices);
  inputs.history = history_.get();
  inputs.trace = &trace_;
  inputs.segments = pools_.picture_of_all().segments;
  inputs.python = python_.get();
  *error = report::write_report(target, inputs);
  if (error->empty()) {
    announce_report(reason, target);
    if (exit_report) exit_report_path_ = target;
  }
  return target;
}

void Runtime::announce_report(const char* reason, const std::string& path) {
  if (config_.report_notice_fd < 0) return;
  // An absolute path: the reader's working directory may differ from this process's.
  std::string absolute = path;
  if (absolute.empty() || absolute[0] != '/') {
    char directory[4096];
    if (::getcwd(directory, sizeof(directory)) != nullptr) {
      absolute = std::string(directory) + "/" + path;
    }
  }
  // Only into `vramshim run`'s pipe: the number may now be a file or pipe of the program's own.
  struct stat notices;
  if (::fstat(config_.report_notice_fd, &notices) != 0 || !S_ISFIFO(notices.st_mode) ||
      notices.st_dev != config_.report_notice_pipe.device ||
      notices.st_ino != config_.report_notice_pipe.inode) {
    return;
  }
  // One write of less than PIPE_BUF bytes: lines from several processes never interleave.
  const std::string line = std::to_string(::getpid()) + " " + reason + " " + absolute + "\n";
  if (line.size() < PIPE_BUF) {
    // Never wait for a reader that does not read.
    const int flags = ::fcntl(config_.report_notice_fd, F_GETFL);
    if (flags >= 0) ::fcntl(config_.report_notice_fd, F_SETFL, flags | O_NONBLOCK);
    const ssize_t written =
        support::write_without_sigpipe(config_.report_notice_fd, line.data(), line.size());
    (void)written;  // the reader may be gone; the report is written anyway
  }
}

attribution::TimelineSample Runtime::timeline_sample(
    const std::vector<pool::DeviceStats>& devices) const {
  uint64_t cached = 0;
  for (const pool::DeviceStats& device : devices) cached += device.stats.cached_bytes;
  return {unix_now(), tracker_.in_use_bytes(), cached};
}

void Runtime::sample_timeline() {
  const attribution::TimelineSample now = timeline_sample(pools_.stats_by_device());
  timeline_.add_sample(now.time, now.in_use_bytes, now.cached_bytes);
}

void Runtime::sample_history() {
  if (history_ == nullptr) return;
  tracker_.live_bytes_by_site(&history_scratch_);
  history_->tick(unix_now(), history_scratch_.data(), history_scratch_.size());
}

namespace {

// With VRAMSHIM_LOG=debug, what every hook saw, as the process unloads the shim.
__attribute__((destructor)) void log_call_summary() {
  if (control::log_level() >= LogLevel::kDebug) {
    control::log_items(LogLevel::kDebug, "calls", call_summary());
  }
}

}  // namespace
}  // namespace vramshim::runtime
