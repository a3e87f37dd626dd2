// A site's label is made once per stack (each making asks dladdr about its frames), and the cache
// stays bounded.
#include "shim/runtime/site_label_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace vramshim::runtime {
namespace {

TEST(SiteLabelCache, MakesEachStacksLabelOnce) {
  SiteLabelCache cache;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::string("train.py:") + std::to_string(made) + " step";
  };
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(cache.label(7, make), "train.py:1 step");
    EXPECT_EQ(cache.label(-1, make), "train.py:2 step");
  }
  EXPECT_EQ(made, 2);
}

TEST(SiteLabelCache, StartsAgainPastItsBound) {
  SiteLabelCache cache;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::string("label");
  };
  for (int32_t stack = 0; stack <= static_cast<int32_t>(SiteLabelCache::kMaxLabels); ++stack) {
    cache.label(stack, make);
  }
  EXPECT_EQ(made, static_cast<int>(SiteLabelCache::kMaxLabels) + 1);
  cache.label(0, make);  // dropped when the bound was reached
  EXPECT_EQ(made, static_cast<int>(SiteLabelCache::kMaxLabels) + 2);
}

}  // namespace
}  // namespace vramshim::runtime
