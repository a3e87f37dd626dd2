// Time to write a report of 1,000,000 live allocations over 100,000 stacks of 40 frames, whose
// return addresses lie in libc (so module lookup and dladdr do real work); and the same with every
// site's history (10,000 ticks), a full trace (262,144 events) and the pool's 1,000,000 blocks in
// "segments". VRAMSHIM_BENCH_REPORT=PATH keeps the latter report there (for timing the analyzer).
#include <benchmark/benchmark.h>
#include <stdio.h>
#include <time.h>
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

attribution::Tracker& tracker_with_live_allocations() {
  static attribution::Tracker* const tracker = [] {
    auto* made = new attribution::Tracker(attribution::TrackerOptions{});
    const auto libc_text = reinterpret_cast<uint64_t>(&fopen);
    std::vector<uint64_t> frames(kDepth);
    for (uint64_t a = 0; a < kLiveAllocations; ++a) {
      const uint64_t s = a % kStacks;
      frames[0] = libc_text + s % kDistinctFrames * 16;
      frames[1] = libc_text + s / kDistinctFrames * 16;
      for (int i = 2; i < kDepth; ++i)
        frames[i] = libc_text + (i * 977 + s % 7) % kDistinctFrames * 16;
      made->on_alloc_with_frames((a + 1) * 512, 4096, attribution::AllocationKind::kDevice, 0, 0,
                                 frames.data(), kDepth);
    }
    return made;
  }();
  return *tracker;
}

void write_and_measure(benchmark::State& state, const report::ReportInputs& inputs,
                       const std::string& path, bool keep) {
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
  if (!keep) unlink(path.c_str());
}

std::string temporary_report_path() {
  const char* directory = getenv("TEST_TMPDIR");
  return std::string(directory != nullptr ? directory : "/tmp") + "/vramshim-bench." +
         std::to_string(getpid()) + ".json";
}

void BM_WriteReport(benchmark::State& state) {
  attribution::Tracker& tracker = tracker_with_live_allocations();
  report::ReportInputs inputs;
  inputs.reason = "cli";
  inputs.process = report::read_process_info(std::nullopt);
  inputs.tracker = &tracker;
  write_and_measure(state, inputs, temporary_report_path(), false);
  state.counters["stacks"] = static_cast<double>(tracker.stacks().stack_count());
  state.counters["frames"] = static_cast<double>(tracker.stacks().frame_count());
}

void BM_WriteReportWithHistoryTraceAndSegments(benchmark::State& state) {
  attribution::Tracker& tracker = tracker_with_live_allocations();
  // 10,000 ticks: every tick 200 sites change, and one grows.
  attribution::SiteHistory history(attribution::SiteHistory::kDefaultBudgetBytes);
  std::vector<uint64_t> live;
  tracker.live_bytes_by_site(&live);
  const double start = static_cast<double>(time(nullptr)) - 1000.0;  // 10,000 ticks ago
  for (uint64_t tick = 0; tick < 10000; ++tick) {
    for (uint64_t i = 0; i < 200; ++i) live[(tick * 200 + i) * 7919 % live.size()] += 512;
    live[3] += 1 << 20;
    history.tick(start + static_cast<double>(tick) * 0.1, live.data(), live.size());
  }
  attribution::EventTrace trace(attribution::EventTrace::kDefaultCapacity);
  for (uint64_t e = 0; e < attribution::EventTrace::kDefaultCapacity; ++e) {
    trace.record(e % 2 == 0 ? attribution::EventType::kAlloc : attribution::EventType::kFree, 0,
                 0x7f0000000000 + e / 2 * 512, 4096, 0, static_cast<int32_t>(e % kStacks));
  }
  report::ReportInputs inputs;
  inputs.reason = "cli";
  inputs.process = report::read_process_info(std::nullopt);
  inputs.tracker = &tracker;
  inputs.history = &history;
  inputs.trace = &trace;
  // The pool's picture: 2 MiB segments of 512 blocks of 4 KiB, each block allocated.
  constexpr uint64_t kBlocksPerSegment = 512;
  for (uint64_t a = 0; a < kLiveAllocations; a += kBlocksPerSegment) {
    pool::SegmentPicture segment{0x7f0000000000 + a * 4096, kBlocksPerSegment * 4096, {}};
    for (uint64_t b = 0; b < kBlocksPerSegment; ++b) {
      segment.blocks.push_back({b * 4096, 4096, pool::BlockState::kAllocated, 4096,
                                static_cast<uint32_t>((a + b) % kStacks + 1)});
    }
    inputs.segments.push_back(std::move(segment));
  }
  const char* keep = getenv("VRAMSHIM_BENCH_REPORT");
  write_and_measure(state, inputs, keep != nullptr ? keep : temporary_report_path(),
                    keep != nullptr);
  state.counters["history_bytes"] = static_cast<double>(history.memory_bytes());
  state.counters["trace_bytes"] = static_cast<double>(trace.memory_bytes());
}
BENCHMARK(BM_WriteReport)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_WriteReportWithHistoryTraceAndSegments)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace vramshim

BENCHMARK_MAIN();
