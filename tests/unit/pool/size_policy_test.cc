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
  for (const Fit fit : {Fit::kExact, Fit::kSlack}) {
    EXPECT_FALSE(policy.should_split(false, 12 * kMiB, 11 * kMiB, fit));
    EXPECT_TRUE(policy.should_split(false, 12 * kMiB, 11 * kMiB - 512, fit));
    EXPECT_FALSE(policy.should_split(true, kMiB, kMiB, fit));
  }
  EXPECT_TRUE(policy.should_split(true, 2 * kMiB, 2 * kMiB - 512, Fit::kExact));
}

TEST(SizePolicy, ASmallBlockIsHandedOutWholeWhenItsRemainderIsAnEighthOfTheRequestAtMost) {
  const SizePolicy policy;
  // 64 KiB requested: 8 KiB left over is kept with it, 8.5 KiB is split off.
  EXPECT_FALSE(policy.should_split(true, 72 * 1024, 64 * 1024, Fit::kSlack));
  EXPECT_TRUE(policy.should_split(true, 72 * 1024 + 512, 64 * 1024, Fit::kSlack));
  // A thread cache's bin takes blocks of its size alone.
  EXPECT_TRUE(policy.should_split(true, 72 * 1024, 64 * 1024, Fit::kExact));
  // 512 B over a 4 KiB request is an eighth; 1 KiB is more.
  EXPECT_FALSE(policy.should_split(true, 4608, 4096, Fit::kSlack));
  EXPECT_TRUE(policy.should_split(true, 5120, 4096, Fit::kSlack));
  // Below 4 KiB an eighth is less than the 512 B granularity: the fit is exact.
  EXPECT_TRUE(policy.should_split(true, 1024, 512, Fit::kSlack));
  EXPECT_TRUE(policy.should_split(true, 3584, 3072, Fit::kSlack));
  // A 2 MiB segment serving its first small request always splits.
  EXPECT_TRUE(policy.should_split(true, 2 * kMiB, kMiB, Fit::kSlack));
}

TEST(SizePolicy, WithoutSplittingSegmentsFitTheRequestAndReuseIsBounded) {
  const SizePolicy policy(/*split_blocks=*/false);
  EXPECT_EQ(policy.segment_size(1536), 1536u);
  EXPECT_FALSE(policy.is_small(512));
  EXPECT_TRUE(policy.can_serve(9 * kMiB, 8 * kMiB));
  EXPECT_FALSE(policy.can_serve(10 * kMiB, 8 * kMiB));
  EXPECT_FALSE(policy.should_split(false, 64 * kMiB, kMiB, Fit::kExact));
  EXPECT_FALSE(policy.should_split(true, kMiB, 512, Fit::kExact));
}

}  // namespace
}  // namespace vramshim::pool
