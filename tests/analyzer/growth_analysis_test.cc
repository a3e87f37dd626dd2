// Which sites `report --growth` calls growing, and by how much per step, on reports of synthesized
// programs of steps: their site history and event trace as the shim writes them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <vector>

#include "analyzer/model/growth.h"

namespace vramshim::analyzer {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr double kStart = 1795980000.0;
constexpr double kStepSeconds = 0.02;
constexpr int kStepsPerTick = 5;  // the history ticks every 100 ms

Frame python_frame(const char* function) {
  Frame frame;
  frame.python = true;
  frame.file = "train.py";
  frame.line = 1;
  frame.function = function;
  return frame;
}

// A program of steps of 20 ms: each allocates and frees 4 MiB at a churning site (site 0; with
// `churning` 2, then 2 MiB at a second, site 2), then does what the test says at the site under
// test (site 1). The history ticks every 5 steps, at the end of the step; the trace holds every
// event.
class Steps {
 public:
  explicit Steps(int churning = 1) : churning_(churning) {
    report_.process.pid = 1;
    report_.process.start_time = kStart;
    for (const char* function : {"churn", "under_test", "churn_b"}) {
      if (report_.sites.size() == 2 && churning_ < 2) break;
      report_.frames.push_back(python_frame(function));
      Stack stack;
      stack.frames.push_back(static_cast<uint32_t>(report_.stacks.size()));
      Site site;
      site.stack = static_cast<int64_t>(report_.stacks.size());
      site.kind = "device";
      report_.history->sites.push_back({static_cast<int64_t>(report_.sites.size()), 0, {}});
      report_.stacks.push_back(stack);
      report_.sites.push_back(site);
    }
  }

  // Stacks sampled, one per `mean_bytes` (VRAMSHIM_STACKS=sample:N).
  void sample(int64_t mean_bytes) {
    report_.config.stacks = "sample";
    report_.config.sample_bytes = mean_bytes;
  }

  // At site 1: allocate (in the trace if `traced`: sampled); free its oldest block, its newest,
  // every block it holds.
  void allocate(int64_t bytes, bool traced = true) {
    held_.push_back({next_address_, bytes});
    if (traced) step_events_.push_back(event("alloc", next_address_, bytes, 1));
    next_address_ += static_cast<uint64_t>(bytes);
  }
  void free_oldest() {
    step_events_.push_back(event("free", held_.front().address, held_.front().size, 1));
    held_.pop_front();
  }
  void free_newest() {
    step_events_.push_back(event("free", held_.back().address, held_.back().size, 1));
    held_.pop_back();
  }
  void free_all() {
    while (!held_.empty()) free_oldest();
  }
  int64_t held() const {
    int64_t bytes = 0;
    for (const Block& block : held_) bytes += block.size;
    return bytes;
  }

  // Ends the step: its events, the churning site's first.
  void end_step() {
    std::vector<TraceEvent> step = {event("alloc", 0x10, 4 * kMiB, 0)};
    if (churning_ == 2) {
      step.push_back(event("alloc", 0x400010, 2 * kMiB, 2));
      step.push_back(event("free", 0x400010, 2 * kMiB, 2));
    }
    step.push_back(event("free", 0x10, 4 * kMiB, 0));
    step.insert(step.end(), step_events_.begin(), step_events_.end());
    step_events_.clear();
    for (size_t i = 0; i < step.size(); ++i) {
      step[i].time = kStart + step_ * kStepSeconds + static_cast<double>(i + 1) * 0.0005;
      report_.trace->events.push_back(step[i]);
    }
    if (++step_ % kStepsPerTick == 0) tick();
  }

  const Report& report() {
    report_.sites[1].live_bytes = held();
    report_.history->ticks = static_cast<int64_t>(report_.history->slot_times.size());
    report_.process.report_time = kStart + step_ * kStepSeconds;
    return report_;
  }

 private:
  struct Block {
    uint64_t address;
    int64_t size;
  };

  static TraceEvent event(const char* type, uint64_t address, int64_t size, int64_t stack) {
    TraceEvent event;
    event.type = type;
    event.address = address;
    event.size = size;
    event.device = 0;
    event.stack = stack;
    return event;
  }

  void tick() {
    History& history = *report_.history;
    const auto slot = static_cast<int64_t>(history.slot_times.size());
    history.slot_times.push_back(kStart + step_ * kStepSeconds);
    std::vector<HistoryPoint>& points = history.sites[1].points;
    const int64_t bytes = held();
    if (points.empty() || points.back().last != bytes) points.push_back({slot, bytes, bytes});
  }

  Report report_ = [] {
    Report report;
    report.history = History{};
    report.trace = Trace{};
    return report;
  }();
  int churning_;
  std::deque<Block> held_;
  std::vector<TraceEvent> step_events_;
  uint64_t next_address_ = 0x100000;
  int step_ = 0;
};

const GrowingSite* site_under_test(const GrowthAnalysis& analysis) {
  for (const GrowingSite& site : analysis.sites) {
    if (site.site == 1) return &site;
  }
  return nullptr;
}
// Not of a temporary analysis: the site would be gone with it.
const GrowingSite* site_under_test(GrowthAnalysis&&) = delete;

// 1 MiB a step, all freed every 100 steps, the report 80 steps into the second tooth (audit): it
// was called growing (a steady line since its last low) at -126.6 KiB per step, the frees of the
// first tooth netted into its steps.
TEST(Growth, ASawtoothIsACycleAndItsFigurePerStepCountsFromItsLastLow) {
  Steps program;
  for (int step = 0; step < 180; ++step) {
    program.allocate(kMiB);
    if (program.held() == 100 * kMiB) program.free_all();
    program.end_step();
  }
  const GrowthAnalysis analysis = analyze_growth(program.report());
  ASSERT_TRUE(analysis.pattern.has_value());
  EXPECT_EQ(analysis.pattern->allocations_per_step, 2);
  const GrowingSite* site = site_under_test(analysis);
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->gained_bytes, 80 * kMiB);
  EXPECT_TRUE(site->cyclic);
  EXPECT_FALSE(site->steady);
  ASSERT_TRUE(site->bytes_per_step.has_value());
  EXPECT_NEAR(*site->bytes_per_step, kMiB, 1);
}

// The same site past its earlier height grows.
TEST(Growth, ACyclePastWhatItHeldBeforeGrows) {
  Steps program;
  for (int step = 0; step < 300; ++step) {
    program.allocate(kMiB);
    if (step == 99) program.free_all();
    program.end_step();
  }
  const GrowthAnalysis analysis = analyze_growth(program.report());
  const GrowingSite* site = site_under_test(analysis);
  ASSERT_NE(site, nullptr);
  EXPECT_FALSE(site->cyclic);
  EXPECT_TRUE(site->steady);
}

// A warm-up buffer of 50 MiB freed at step 150, then a leak of 1 MiB a step: it grows from its
// low, after the free, at 1 MiB a step (the free netted into the steps made 0.66 MiB).
TEST(Growth, TheFigurePerStepLeavesOutWhatTheSiteFreedBeforeItsLow) {
  Steps program;
  program.allocate(50 * kMiB);
  for (int step = 0; step < 300; ++step) {
    if (step == 150) program.free_oldest();  // the warm-up buffer
    program.allocate(kMiB);
    if (step < 150) program.free_newest();  // not kept yet
    program.end_step();
  }
  const GrowthAnalysis analysis = analyze_growth(program.report());
  ASSERT_TRUE(analysis.pattern.has_value());
  const GrowingSite* site = site_under_test(analysis);
  ASSERT_NE(site, nullptr);
  EXPECT_TRUE(site->steady);
  ASSERT_TRUE(site->bytes_per_step.has_value());
  EXPECT_NEAR(*site->bytes_per_step, kMiB, 1);
}

// Stacks sampled one per MiB (VRAMSHIM_STACKS=sample:1M): a leak of 32 KiB a step, each of its
// allocations in the trace with probability p = 1 - exp(-1/32), two churning allocations a step
// (audit: the raw sampled bytes made 3.4 KiB a step for a leak of 64 KiB). Each traced allocation
// stands for 32 KiB / p, as in the site's figures.
TEST(Growth, TheFigurePerStepOfSampledStacksWeighsEachSampledAllocation) {
  constexpr int64_t kLeak = 32 << 10;
  const double p = -std::expm1(-1.0 / 32);
  Steps program(2);
  program.sample(kMiB);
  uint64_t random = 42;
  for (int step = 0; step < 600; ++step) {
    random = random * 6364136223846793005ULL + 1442695040888963407ULL;
    program.allocate(kLeak, static_cast<double>(random >> 11) * 0x1p-53 < p);
    program.end_step();
  }
  const Report& report = program.report();
  const GrowthAnalysis analysis = analyze_growth(report);
  ASSERT_TRUE(analysis.pattern.has_value());
  EXPECT_EQ(analysis.pattern->allocations_per_step, 2);
  const GrowingSite* site = site_under_test(analysis);
  ASSERT_NE(site, nullptr);
  ASSERT_TRUE(site->bytes_per_step.has_value());
  // The site grew from the start: every step of the pattern counts.
  ASSERT_LT(site->start_time, report.trace->events[analysis.pattern->first_event].time);
  double weighted = 0;
  int traced = 0;
  for (size_t e = analysis.pattern->first_event; e < analysis.pattern->end_event; ++e) {
    const TraceEvent& event = report.trace->events[e];
    if (event.stack == 1 && event.type == "alloc") {
      weighted += static_cast<double>(kLeak) / p;
      ++traced;
    }
  }
  ASSERT_GT(traced, 3);
  EXPECT_NEAR(*site->bytes_per_step, weighted / static_cast<double>(analysis.pattern->steps), 1);
  EXPECT_NEAR(*site->bytes_per_step, kLeak, kLeak * 0.5);  // an estimate from a few samples
}

}  // namespace
}  // namespace vramshim::analyzer
