// Cost of one stack capture at 20, 40 and 64 frames, with warm unwinder caches.
#include <benchmark/benchmark.h>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"

namespace vramshim::attribution {
namespace {

void capture_loop(benchmark::State& state, const StackCapture& capture) {
  StackCapture::Buffer buffer;
  int depth = 0;
  for (auto _ : state) {
    depth = capture.capture(buffer).depth;
    benchmark::DoNotOptimize(buffer);
  }
  state.counters["frames"] = depth;
}

// Recurses well past the depth to capture so that every capture is cut at `depth` frames.
__attribute__((noinline)) void recurse_then_capture(int remaining, benchmark::State& state,
                                                    const StackCapture& capture) {
  if (remaining > 0) {
    recurse_then_capture(remaining - 1, state, capture);
  } else {
    capture_loop(state, capture);
  }
  asm volatile("" ::: "memory");
}

void BM_StackCapture(benchmark::State& state) {
  const auto unwinder = static_cast<Unwinder>(state.range(1));
  const StackCapture capture(static_cast<int>(state.range(0)), unwinder, ModuleRange{});
  if (capture.unwinder() != unwinder) {
    state.SkipWithError("libunwind is not available");
    return;
  }
  recurse_then_capture(80, state, capture);
}

BENCHMARK(BM_StackCapture)
    ->ArgNames({"depth", "libgcc"})
    ->ArgsProduct({{20, 40, 64},
                   {static_cast<int>(Unwinder::kLibunwind), static_cast<int>(Unwinder::kLibgcc)}});

}  // namespace
}  // namespace vramshim::attribution

BENCHMARK_MAIN();
