#include "analyzer/replay/pool_replay.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/replay/replay_device.h"
#include "shim/pool/caching_pool.h"

namespace vramshim::analyzer {
namespace {

// One call of the replay: allocate `bytes` into `slot`, or (bytes 0) free what `slot` holds. Slots
// stand for the trace's addresses, so that the timed loop looks nothing up.
struct ReplayStep {
  uint32_t slot;
  uint64_t bytes;
};

struct ReplayScript {
  std::vector<ReplayStep> steps;
  uint32_t slots = 0;
};

ReplayScript script_of(const DeviceTrace& trace) {
  ReplayScript script;
  std::unordered_map<uint64_t, uint32_t> slot_at;
  for (const AllocationEvent& event : trace.events) {
    if (event.action == AllocationEvent::Action::kAllocate) {
      slot_at[event.address] = script.slots;
      script.steps.push_back({script.slots++, event.bytes});
    } else if (event.action == AllocationEvent::Action::kFree) {
      const auto it = slot_at.find(event.address);
      script.steps.push_back({it->second, 0});
      slot_at.erase(it);
    }
  }
  return script;
}

struct PoolOnDevice {
  explicit PoolOnDevice(const pool::PoolOptions& options) : pool(device, options, limit, capture) {}
  pool::CaptureState capture;
  ReplayDevice device;
  pool::DeviceLimit limit;
  pool::CachingPool pool;
};

[[noreturn]] void refused(size_t step, const std::string& why) {
  throw std::runtime_error("call " + std::to_string(step + 1) + " of the replay: " + why);
}

// Replays the first `steps` steps of `script` on `run`, checking every result; `live` gets the
// live allocations (address → rounded request). Calls at_step(i) after each allocation.
template <typename AtStep>
void replay_steps(const ReplayScript& script, size_t steps, PoolOnDevice& run,
                  std::map<uint64_t, uint64_t>& live, AtStep&& at_step) {
  std::vector<CUdeviceptr> ptrs(script.slots);
  for (size_t i = 0; i < steps; ++i) {
    const ReplayStep& step = script.steps[i];
    CUdeviceptr& ptr = ptrs[step.slot];
    if (step.bytes == 0) {
      const pool::FreeResult result = run.pool.free(ptr);
      if (!result.owned) refused(i, "the pool does not hold the pointer freed");
      if (result.status != CUDA_SUCCESS) {
        refused(i, "the pool's free returned CUDA error " + std::to_string(result.status));
      }
      live.erase(ptr);
      continue;
    }
    pool::OutOfMemoryCause cause = pool::OutOfMemoryCause::kTooLarge;
    const CUresult result = run.pool.allocate(step.bytes, &ptr, 0, &cause);
    if (result == CUDA_ERROR_OUT_OF_MEMORY && cause == pool::OutOfMemoryCause::kDriver) {
      refused(i, "no room for " + std::to_string(step.bytes) +
                     " bytes on the replay's device of 2^50 bytes, even with the pool emptied");
    }
    if (result != CUDA_SUCCESS) {
      refused(i, "the pool refused " + std::to_string(step.bytes) + " bytes with CUDA error " +
                     std::to_string(result));
    }
    live[ptr] = rounded_request(step.bytes);
    at_step(i);
  }
}

MemoryFigures figures_of(const ReplayScript& script, const pool::PoolOptions& options) {
  PoolOnDevice run(options);
  std::map<uint64_t, uint64_t> live;
  // The step at which reserved memory was last at a new high: the free ranges are those of that
  // moment, found by replaying up to it again (finding them at every new high was quadratic).
  uint64_t reserved_at_snapshot = 0;
  std::optional<size_t> snapshot_step;
  replay_steps(script, script.steps.size(), run, live, [&](size_t i) {
    const uint64_t reserved = run.pool.stats().reserved_bytes;
    if (reserved > reserved_at_snapshot) {
      reserved_at_snapshot = reserved;
      snapshot_step = i;
    }
  });
  MemoryFigures figures;
  if (snapshot_step) {
    PoolOnDevice again(options);
    std::map<uint64_t, uint64_t> live_then;
    replay_steps(script, *snapshot_step + 1, again, live_then, [](size_t) {});
    figures.at_peak = free_ranges(again.device.segments(), live_then);
  }
  const pool::PoolStats stats = run.pool.stats();
  figures.peak_reserved_bytes = stats.peak_reserved_bytes;
  figures.peak_in_use_bytes = stats.peak_in_use_bytes;
  figures.driver_alloc_calls = stats.driver_alloc_calls;
  figures.driver_free_calls = stats.driver_free_calls;
  return figures;
}

// Nanoseconds per call of one replay on a fresh pool; the figures run has checked every result.
double timed_run(const ReplayScript& script, const pool::PoolOptions& options) {
  PoolOnDevice run(options);
  std::vector<CUdeviceptr> ptrs(script.slots);
  bool failed = false;
  const auto start = std::chrono::steady_clock::now();
  for (const ReplayStep& step : script.steps) {
    if (step.bytes == 0) {
      failed |= run.pool.free(ptrs[step.slot]).status != CUDA_SUCCESS;
    } else {
      failed |= run.pool.allocate(step.bytes, &ptrs[step.slot]) != CUDA_SUCCESS;
    }
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  if (failed) throw std::runtime_error("the pool refused a call it had served before");
  return elapsed.count() / static_cast<double>(script.steps.size());
}

}  // namespace

MemoryFigures replay_through_pool(const DeviceTrace& trace, const pool::PoolOptions& options,
                                  int timed_runs) {
  const ReplayScript script = script_of(trace);
  MemoryFigures figures = figures_of(script, options);
  double fastest = std::numeric_limits<double>::infinity();
  for (int run = 0; run < timed_runs; ++run)
    fastest = std::min(fastest, timed_run(script, options));
  if (timed_runs > 0) figures.ns_per_operation = fastest;
  return figures;
}

}  // namespace vramshim::analyzer
