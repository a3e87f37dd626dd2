// A device's figures over its pools: each figure of shim/support/device_figures.def combines by its
// merge rule, and the optional one (the limit) is the device's.
#include "shim/pool/pool_stats.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

TEST(PoolStats, AddsEveryFigureAndKeepsTheDevicesLimit) {
  PoolStats a;
  PoolStats b;
  uint64_t next = 1;
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, unit, presence, ...)                   \
  if constexpr (support::FigurePresence::presence == support::FigurePresence::kAlways) { \
    a.name = next;                                                                       \
    b.name = next * 1000;                                                                \
  }                                                                                      \
  ++next;
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  b.limit_bytes = 99;
  PoolStats sum = a;
  sum += b;
  next = 1;
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, unit, presence, ...)                           \
  if constexpr (support::FigurePresence::presence == support::FigurePresence::kAlways) {         \
    EXPECT_EQ(sum.name, support::FigureMerge::merge == support::FigureMerge::kMax ? next * 1000  \
                                                                                  : next * 1001) \
        << #name;                                                                                \
  }                                                                                              \
  ++next;
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  EXPECT_EQ(sum.limit_bytes, 99u);
  sum += a;  // a pool that does not know the limit leaves it
  EXPECT_EQ(sum.limit_bytes, 99u);
}

}  // namespace
}  // namespace vramshim::pool
