// A trace replayed through vramshim's caching pool, in-process.
#pragma once

#include "analyzer/model/allocation_trace.h"
#include "analyzer/replay/memory_figures.h"
#include "shim/pool/pool_options.h"

namespace vramshim::analyzer {

// Replays the allocations and frees of `trace`, in order, through a fresh CachingPool with
// `options` on a ReplayDevice: once for the figures (from the pool's stats, and the free ranges of
// its segments), then `timed_runs` more times, each on a fresh pool with nothing else in the loop,
// for the time per call (the fastest run's). Throws std::runtime_error if the pool refuses a call.
MemoryFigures replay_through_pool(const DeviceTrace& trace, const pool::PoolOptions& options,
                                  int timed_runs);

}  // namespace vramshim::analyzer
