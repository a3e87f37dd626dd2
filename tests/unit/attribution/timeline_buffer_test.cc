#include "shim/attribution/timeline_buffer.h"

#include <gtest/gtest.h>

namespace vramshim::attribution {
namespace {

TEST(TimelineBuffer, KeepsSamplesInOrderUntilFull) {
  TimelineBuffer buffer(100, 4);
  for (int i = 1; i <= 4; ++i) buffer.add_sample(i * 0.1, i * 10, i);
  const Timeline timeline = buffer.read();
  EXPECT_EQ(timeline.interval_ms, 100u);
  ASSERT_EQ(timeline.samples.size(), 4u);
  EXPECT_EQ(timeline.samples[2].in_use_bytes, 30u);
  EXPECT_EQ(timeline.samples[2].cached_bytes, 3u);
}

TEST(TimelineBuffer, MergesPairsKeepingTheLargerInUseAndDoublesTheInterval) {
  TimelineBuffer buffer(100, 4);
  const uint64_t in_use[] = {5, 9, 7, 3, 4, 8};
  for (int i = 0; i < 6; ++i) buffer.add_sample(i * 0.1, in_use[i], 100 + i);
  const Timeline timeline = buffer.read();
  EXPECT_EQ(timeline.interval_ms, 200u);
  ASSERT_EQ(timeline.samples.size(), 3u);
  EXPECT_EQ(timeline.samples[0].in_use_bytes, 9u);
  EXPECT_EQ(timeline.samples[0].cached_bytes, 101u);  // the cached bytes of the kept sample
  EXPECT_DOUBLE_EQ(timeline.samples[0].time, 0.1);
  EXPECT_EQ(timeline.samples[1].in_use_bytes, 7u);
  EXPECT_EQ(timeline.samples[2].in_use_bytes, 8u);  // 4 and 8 share the third slot
}

TEST(TimelineBuffer, StaysBoundedAndKeepsTheMaximumOverALongRun) {
  TimelineBuffer buffer(100, 64);
  for (int i = 0; i < 100000; ++i) {
    buffer.add_sample(i * 0.1, i == 73737 ? 1'000'000 : static_cast<uint64_t>(i % 1000), 0);
  }
  const Timeline timeline = buffer.read();
  EXPECT_LE(timeline.samples.size(), 64u);
  EXPECT_GE(timeline.samples.size(), 32u);
  uint64_t largest = 0;
  for (size_t i = 0; i < timeline.samples.size(); ++i) {
    largest = std::max(largest, timeline.samples[i].in_use_bytes);
    if (i > 0) {
      EXPECT_LT(timeline.samples[i - 1].time, timeline.samples[i].time);
    }
  }
  EXPECT_EQ(largest, 1'000'000u);
  // 100,000 samples in at most 64 slots: each slot stands for 2048 base samples.
  EXPECT_EQ(timeline.interval_ms, 100u * 2048u);
}

}  // namespace
}  // namespace vramshim::attribution
