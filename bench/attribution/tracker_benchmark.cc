// What attribution adds to an allocation: on_alloc + on_free with stacks all, sampled or off, the
// memory tracking holds per live allocation and per unique stack, and what finding the sites
// holding the most costs.
#include <benchmark/benchmark.h>

#include <vector>

#include "shim/attribution/tracker.h"

namespace vramshim::attribution {
namespace {

constexpr int kCallerDepth = 30;  // a typical framework stack below the allocator

void alloc_free_loop(benchmark::State& state, Tracker& tracker) {
  uint64_t key = 0x7f0000000000ULL;
  for (auto _ : state) {
    tracker.on_alloc(key, 1 << 20, AllocationKind::kDevice, 0, 0);
    tracker.on_free(key);
    key += 512;
  }
}

__attribute__((noinline)) void recurse_then_run(int remaining, benchmark::State& state,
                                                Tracker& tracker) {
  if (remaining > 0) {
    recurse_then_run(remaining - 1, state, tracker);
  } else {
    alloc_free_loop(state, tracker);
  }
  asm volatile("" ::: "memory");
}

// Arg: 0 stacks all, 1 stacks off, 2 sample:1MiB (so about 63% of these 1 MiB allocations).
void BM_AllocFree(benchmark::State& state) {
  TrackerOptions options;
  options.stacks = state.range(0) == 0   ? StackMode::kAll
                   : state.range(0) == 1 ? StackMode::kOff
                                         : StackMode::kSample;
  options.sample_bytes = 1 << 20;
  options.stack_depth = 64;
  options.own_module = ModuleRange::of_this_module();
  Tracker tracker(options);
  recurse_then_run(kCallerDepth, state, tracker);
}
BENCHMARK(BM_AllocFree)->ArgName("all0_off1_sample2")->DenseRange(0, 2)->ThreadRange(1, 2);

void BM_MemoryPerLiveAllocation(benchmark::State& state) {
  const auto live = static_cast<uint64_t>(state.range(0));
  TrackerOptions options;
  options.stacks = StackMode::kOff;
  for (auto _ : state) {
    Tracker tracker(options);
    for (uint64_t i = 1; i <= live; ++i) {
      tracker.on_alloc(i * 512, 512, AllocationKind::kDevice, 0, 0);
    }
    const TrackerMemory memory = tracker.memory_usage();
    state.counters["bytes_per_live_allocation"] =
        static_cast<double>(memory.live_table_bytes) / static_cast<double>(live);
  }
}
BENCHMARK(BM_MemoryPerLiveAllocation)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_MemoryPerUniqueStack(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  constexpr uint64_t kStacks = 100000;
  TrackerOptions options;
  for (auto _ : state) {
    Tracker tracker(options);
    std::vector<uint64_t> frames(depth);
    for (uint64_t s = 0; s < kStacks; ++s) {
      // Distinct stacks over a few thousand distinct return addresses, as in a real program.
      for (int i = 0; i < depth; ++i) frames[i] = 0x400000 + ((s >> (i % 17)) + i * 131) % 4000 * 8;
      frames[0] = 0x400000 + s * 8;
      tracker.on_alloc_with_frames(s + 1, 512, AllocationKind::kDevice, 0, 0, frames.data(), depth);
    }
    const TrackerMemory memory = tracker.memory_usage();
    state.counters["bytes_per_stack"] =
        static_cast<double>(memory.stack_table_bytes) / static_cast<double>(memory.stacks);
    state.counters["site_bytes_per_stack"] =
        static_cast<double>(memory.site_bytes) / static_cast<double>(memory.stacks);
  }
}
BENCHMARK(BM_MemoryPerUniqueStack)
    ->ArgName("depth")
    ->Arg(20)
    ->Arg(40)
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// What a `sites 10` request (vramshim exporter, top) holds the figures' lock for: one pass over the
// sites, during which allocating threads wait. Arg: live sites.
void BM_LiveLeaders(benchmark::State& state) {
  const auto sites = static_cast<uint64_t>(state.range(0));
  TrackerOptions options;
  Tracker tracker(options);
  uint64_t frames[4] = {0x400000, 0x500000, 0x600000, 0x700000};
  for (uint64_t s = 0; s < sites; ++s) {
    frames[0] = 0x400000 + s * 8;
    tracker.on_alloc_with_frames(s + 1, 512 * (s % 97 + 1), AllocationKind::kDevice, 0, 0, frames,
                                 4);
  }
  for (auto _ : state) benchmark::DoNotOptimize(tracker.live_leaders(10));
}
BENCHMARK(BM_LiveLeaders)->Arg(1000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vramshim::attribution

BENCHMARK_MAIN();
