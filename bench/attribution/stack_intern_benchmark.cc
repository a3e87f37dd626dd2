// Interning a known stack against unwinding it, at 20, 40 and 64 frames. BM_Unwind captures the
// stack (libunwind, warm caches); BM_Intern interns that captured stack into a table that already
// holds it and kOtherStacks others sharing its outer frames, as a program's stacks do. At the end
// it prints intern/unwind per depth (CPU time, min and median over the repetitions). Run with
// repetitions interleaved:
//   bazel run -c opt //bench/attribution:stack_intern_benchmark --
//     --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "shim/attribution/stack_table.h"

namespace vramshim::attribution {
namespace {

constexpr int kRecursion = 80;  // well past the deepest stack measured: every capture is cut
constexpr int kOtherStacks = 1000;

using StackUser = void (*)(benchmark::State&, const StackCapture&);

__attribute__((noinline)) void recurse_then(int remaining, StackUser use, benchmark::State& state,
                                            const StackCapture& capture) {
  if (remaining > 0) {
    recurse_then(remaining - 1, use, state, capture);
  } else {
    use(state, capture);
  }
  asm volatile("" ::: "memory");
}

void unwind_loop(benchmark::State& state, const StackCapture& capture) {
  StackCapture::Buffer buffer;
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture.capture(buffer));
    benchmark::ClobberMemory();
  }
}

void intern_loop(benchmark::State& state, const StackCapture& capture) {
  StackCapture::Buffer buffer;
  const StackCapture::Frames captured = capture.capture(buffer);
  const uint64_t* frames = captured.frames;
  const int depth = captured.depth;
  StackTable table;
  uint64_t other[StackCapture::kMaxDepth];
  std::copy(frames, frames + depth, other);
  for (uint64_t s = 0; s < kOtherStacks; ++s) {
    other[0] = 0x7f0000001000 + s * 16;                 // another allocating call site …
    other[depth / 2] = frames[depth / 2] + s % 7 * 16;  // … reached through another caller
    table.intern(other, depth);
  }
  table.intern(frames, depth);
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.intern(frames, depth));
    benchmark::ClobberMemory();
  }
  state.counters["frames"] = depth;
}

void run_at_depth(benchmark::State& state, StackUser use) {
  const StackCapture capture(static_cast<int>(state.range(0)), Unwinder::kLibunwind, ModuleRange{});
  if (capture.unwinder() != Unwinder::kLibunwind) {
    state.SkipWithError("libunwind is not available");
    return;
  }
  recurse_then(kRecursion, use, state, capture);
}

void BM_Unwind(benchmark::State& state) { run_at_depth(state, unwind_loop); }
void BM_Intern(benchmark::State& state) { run_at_depth(state, intern_loop); }

BENCHMARK(BM_Unwind)->ArgName("depth")->Arg(20)->Arg(40)->Arg(64);
BENCHMARK(BM_Intern)->ArgName("depth")->Arg(20)->Arg(40)->Arg(64);

// The console report, then intern/unwind per depth from the CPU time of each repetition.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      cpu_ns_[run.run_name.args][run.run_name.function_name].push_back(run.GetAdjustedCPUTime());
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::ostream& out = GetOutputStream();
    out << "\nintern/unwind, CPU time per call over the repetitions:\n";
    for (auto& [args, by_benchmark] : cpu_ns_) {
      const std::vector<double>& unwind = by_benchmark["BM_Unwind"];
      const std::vector<double>& intern = by_benchmark["BM_Intern"];
      if (unwind.empty() || intern.empty()) continue;
      const double unwind_min = min_of(unwind), unwind_median = median_of(unwind);
      const double intern_min = min_of(intern), intern_median = median_of(intern);
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s: unwind %.1f ns (min) %.1f ns (median), intern %.1f ns (min) %.1f ns "
                    "(median); intern/unwind %.3f (min) %.3f (median)\n",
                    args.c_str(), unwind_min, unwind_median, intern_min, intern_median,
                    intern_min / unwind_min, intern_median / unwind_median);
      out << line;
    }
  }

 private:
  static double min_of(const std::vector<double>& values) {
    return *std::min_element(values.begin(), values.end());
  }
  static double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  }

  // CPU ns per iteration, by arguments ("depth:40") and benchmark, one entry per repetition.
  std::map<std::string, std::map<std::string, std::vector<double>>> cpu_ns_;
};

}  // namespace
}  // namespace vramshim::attribution

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  vramshim::attribution::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
