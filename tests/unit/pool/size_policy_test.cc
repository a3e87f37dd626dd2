#include "shim/pool/size_policy.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(SizePolicy, RoundsUpTo512Bytes) {
  EXPECT_EQ(SizePolicy::round(1), 512u);
  EXPECT_EQ(SizePolicy::round(512), 512u);
  EXPECT_EQ(SizePolicy::round(513), 1024u);
}

TEST(SizePolicy, SmallRequestsShareTwoMiBSegments) {
  const SizePolicy policy;
  EXPECT_TRUE(policy.is_small(kMiB));
  EXPECT_FALSE(policy.is_small(kMiB + 512));
  EXPECT_EQ(policy.segment_size(512), 2 * kMiB);
  EXPECT_EQ(policy.segment_size(kMiB), 2 * kMiB);
}

TEST(SizePolicy, LargeSegmentsAreTwentyMiBOrRoundedToTwoMiB) {
  const SizePolicy policy;
  EXPECT_EQ(policy.segment_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(policy.segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(policy.segment_size(10 * kMiB + 512), 12 * kMiB);
}

TEST(SizePolicy, UnsplitBlocksAreOversizedByAtMostOneMiB) {
  const SizePolicy policy;
  EXPECT_FALSE(policy.should_split(false, 12 * kMiB, 11 * kMiB));
  EXPECT_TRUE(policy.should_split(false, 12 * kMiB, 11 * kMiB - 512));
  EXPECT_TRUE(policy.should_split(true, 2 * kMiB, 2 * kMiB - 512));
  EXPECT_FALSE(policy.should_split(true, kMiB, kMiB));
}

TEST(SizePolicy, WithoutSplittingSegmentsFitTheRequestAndReuseIsBounded) {
  const SizePolicy policy(/*split_blocks=*/false);
  EXPECT_EQ(policy.segment_size(1536), 1536u);
  EXPECT_FALSE(policy.is_small(512));
  EXPECT_TRUE(policy.can_serve(9 * kMiB, 8 * kMiB));
  EXPECT_FALSE(policy.can_serve(10 * kMiB, 8 * kMiB));
  EXPECT_FALSE(policy.should_split(false, 64 * kMiB, kMiB));
}

}  // namespace
}  // namespace vramshim::pool
