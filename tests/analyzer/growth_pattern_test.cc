// The repeating allocation pattern (a training step) found in a report's event trace.
#include <gtest/gtest.h>

#include <vector>

#include "analyzer/model/growth.h"

namespace vramshim::analyzer {
namespace {

// `steps` steps of `step_seconds`, each allocating `run` times in a row from stack 1, then once
// from stack 2 (kept: a leak) and once from stack 3; stack 1's blocks are freed as they come.
Trace steps_of(int steps, int run, double step_seconds) {
  Trace trace;
  uint64_t address = 0x1000;
  for (int step = 0; step < steps; ++step) {
    const int allocations = run + 2;
    for (int i = 0; i < allocations; ++i) {
      TraceEvent event;
      event.type = "alloc";
      event.time = step * step_seconds + i * step_seconds / allocations;
      event.stack = i < run ? 1 : (i == run ? 2 : 3);
      event.size = 4096;
      event.address = address += 4096;
      trace.events.push_back(event);
      if (event.stack == 1) {
        event.type = "free";
        trace.events.push_back(event);
      }
    }
  }
  return trace;
}

// A step's churn is one site's allocations in a row: every short period nearly matched, and the
// first one within 90 % (1) was taken for the step, its bytes per step then 100 times too small.
TEST(RepeatingPattern, IsTheWholeStepWhenOneSiteAllocatesManyTimesInARow) {
  const Trace trace = steps_of(400, 100, 0.0054);
  const std::optional<RepeatingPattern> pattern = find_repeating_pattern(trace);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->allocations_per_step, 102);
  EXPECT_NEAR(pattern->step_seconds, 0.0054, 1e-9);
}

TEST(RepeatingPattern, IsTheShortestOfThePeriodsThatMatchWhenStepsAreShort) {
  const Trace trace = steps_of(2000, 1, 0.01);
  const std::optional<RepeatingPattern> pattern = find_repeating_pattern(trace);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->allocations_per_step, 3);  // not 6, 9, ...
  EXPECT_NEAR(pattern->step_seconds, 0.01, 1e-9);
}

// 300 steps of 4 allocations (stacks 1, 2, 3, 4), then 200 of 3 (1, 2, 4) of 20 ms (audit: a
// phase with one allocation more a step): over the whole second half of the allocations, 12 (a
// step of each) matched best, "12 allocations per step" every 74.4 ms. The step is what the
// program does now.
TEST(RepeatingPattern, IsTheStepOfTheMostRecentAllocationsWhenTheStepChanged) {
  Trace trace;
  double time = 0;
  for (int step = 0; step < 500; ++step) {
    const std::vector<int64_t> stacks =
        step < 300 ? std::vector<int64_t>{1, 2, 3, 4} : std::vector<int64_t>{1, 2, 4};
    for (size_t i = 0; i < stacks.size(); ++i) {
      TraceEvent event;
      event.type = "alloc";
      event.time = time + static_cast<double>(i) * 0.001;
      event.stack = stacks[i];
      trace.events.push_back(event);
    }
    time += step < 300 ? 0.03 : 0.02;
  }
  const std::optional<RepeatingPattern> pattern = find_repeating_pattern(trace);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->allocations_per_step, 3);
  // Its steps reach back to where the step changed, give or take an allocation.
  EXPECT_NEAR(pattern->step_seconds, 0.02, 1e-4);
  EXPECT_NEAR(pattern->steps, 200, 1);
}

TEST(RepeatingPattern, NoneWithoutARepetition) {
  Trace trace;
  for (int i = 0; i < 3000; ++i) {
    TraceEvent event;
    event.type = "alloc";
    event.time = i * 0.001;
    event.stack = (i * 7919) % 1009;  // stacks in no repeating order short of 1009
    trace.events.push_back(event);
  }
  EXPECT_FALSE(find_repeating_pattern(trace).has_value());
}

}  // namespace
}  // namespace vramshim::analyzer
