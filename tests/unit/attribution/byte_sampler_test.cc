#include "shim/attribution/byte_sampler.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vramshim::attribution {
namespace {

TEST(ByteSampler, SamplesEachSizeWithProbabilityOneMinusExpOfMinusSizeOverMean) {
  ByteSampler sampler(1 << 20, 11);
  for (uint64_t size : {uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{3} << 20}) {
    int sampled = 0;
    constexpr int kDraws = 40000;
    for (int i = 0; i < kDraws; ++i) sampled += sampler.should_sample(size) ? 1 : 0;
    const double expected = -std::expm1(-static_cast<double>(size) / (1 << 20));
    EXPECT_NEAR(static_cast<double>(sampled) / kDraws, expected, 0.02) << size;
  }
}

TEST(ByteSampler, WeightsUndoTheSamplingProbability) {
  ByteSampler sampler(1000, 1);
  const double p = -std::expm1(-0.5);
  const AllocationWeight weight = sampler.weight_of(500);
  EXPECT_NEAR(static_cast<double>(weight.bytes), 500 / p, 1.0);
  EXPECT_NEAR(static_cast<double>(weight.count_units) / kCountUnit, 1 / p, 1e-4);
  // Far above the mean an allocation is always sampled and stands for itself.
  const AllocationWeight large = sampler.weight_of(1'000'000);
  EXPECT_EQ(large.bytes, 1'000'000u);
  EXPECT_EQ(large.count_units, kCountUnit);
}

TEST(ByteSampler, ZeroBytesAreNeverSampled) {
  ByteSampler sampler(1, 5);
  EXPECT_FALSE(sampler.should_sample(0));
}

}  // namespace
}  // namespace vramshim::attribution
