// Time to write a report of 1,000,000 live allocations over 100,000 stacks of 40 frames, whose
// return addresses lie in libc (so module lookup and dladdr do real work).
#include <benchmark/benchmark.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "shim/attribution/tracker.h"
#include "shim/report/report_writer.h"

namespace vramshim {
namespace {

constexpr uint64_t kStacks = 100000;
constexpr uint64_t kLiveAllocations = 1000000;
constexpr int kDepth = 40;
constexpr uint64_t kDistinctFrames = 5000;

void BM_WriteReport(benchmark::State& state) {
  attribution::TrackerOptions options;
  attribution::Tracker tracker(options);
  const auto libc_text = reinterpret_cast<uint64_t>(&fopen);
  std::vector<uint64_t> frames(kDepth);
  for (uint64_t a = 0; a < kLiveAllocations; ++a) {
    const uint64_t s = a % kStacks;
    frames[0] = libc_text + s % kDistinctFrames * 16;
    frames[1] = libc_text + s / kDistinctFrames * 16;
    for (int i = 2; i < kDepth; ++i)
      frames[i] = libc_text + (i * 977 + s % 7) % kDistinctFrames * 16;
    tracker.on_alloc_with_frames((a + 1) * 512, 4096, 4096, attribution::AllocationKind::kDevice, 0,
                                 0, frames.data(), kDepth);
  }
  report::ReportInputs inputs;
  inputs.reason = "cli";
  inputs.process = report::read_process_info(std::nullopt);
  inputs.tracker = &tracker;
  const char* directory = getenv("TEST_TMPDIR");
  const std::string path = std::string(directory != nullptr ? directory : "/tmp") +
                           "/vramshim-bench." + std::to_string(getpid()) + ".json";
  for (auto _ : state) {
    const std::string error = report::write_report(path, inputs);
    if (!error.empty()) state.SkipWithError(error.c_str());
  }
  FILE* written = fopen(path.c_str(), "r");
  if (written != nullptr) {
    fseek(written, 0, SEEK_END);
    state.counters["report_bytes"] = static_cast<double>(ftell(written));
    fclose(written);
  }
  unlink(path.c_str());
  state.counters["stacks"] = static_cast<double>(tracker.stacks().stack_count());
  state.counters["frames"] = static_cast<double>(tracker.stacks().frame_count());
}
BENCHMARK(BM_WriteReport)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace vramshim

BENCHMARK_MAIN();
