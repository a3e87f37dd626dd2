// When a mapped VMM allocation ends: at its release when nothing maps it, else at the unmap of its
// last mapping, whichever thread makes which call, and never at an unmap the driver refuses.
#include "shim/runtime/vmm_mappings.h"

#include <gtest/gtest.h>

namespace vramshim::runtime {
namespace {

constexpr size_t kGranule = size_t{2} << 20;
constexpr CUdeviceptr kRange = CUdeviceptr{1} << 40;
constexpr CUmemGenericAllocationHandle kHandle = 0x1234;

using Handles = VmmMappings::Handles;

TEST(VmmMappings, AReleasedHandleEndsAtTheUnmapOfItsLastMapping) {
  VmmMappings mappings;
  mappings.on_mapped(kRange, kGranule, kHandle);
  mappings.on_mapped(kRange + kGranule, kGranule, kHandle);
  ASSERT_TRUE(mappings.is_mapped(kHandle));
  EXPECT_FALSE(mappings.after_release(kHandle));
  EXPECT_EQ(mappings.freed_by_unmap(kRange, kGranule), Handles{});
  EXPECT_EQ(mappings.on_unmapped(kRange, kGranule, {}), Handles{});
  const Handles freed = mappings.freed_by_unmap(kRange + kGranule, kGranule);
  EXPECT_EQ(freed, Handles{kHandle});
  EXPECT_EQ(mappings.on_unmapped(kRange + kGranule, kGranule, freed), Handles{}) << "ended once";
  EXPECT_FALSE(mappings.is_mapped(kHandle));
}

// One thread unmaps while another releases: the unmap looked before the release (nothing to end),
// the release came before the unmap's end (a mapping left): the unmap's end ends it.
TEST(VmmMappings, AReleaseBetweenAnUnmapsTwoHalvesEndsAtTheUnmap) {
  VmmMappings mappings;
  mappings.on_mapped(kRange, kGranule, kHandle);
  const Handles freed = mappings.freed_by_unmap(kRange, kGranule);
  EXPECT_EQ(freed, Handles{});
  ASSERT_TRUE(mappings.is_mapped(kHandle));
  EXPECT_FALSE(mappings.after_release(kHandle));
  EXPECT_EQ(mappings.on_unmapped(kRange, kGranule, freed), Handles{kHandle});
}

// The driver unmaps only whole mappings: half of one is refused, and ends nothing.
TEST(VmmMappings, AnUnmapOfPartOfAMappingEndsNothing) {
  VmmMappings mappings;
  mappings.on_mapped(kRange, 2 * kGranule, kHandle);
  EXPECT_FALSE(mappings.after_release(kHandle));
  EXPECT_EQ(mappings.freed_by_unmap(kRange, kGranule), Handles{});
  EXPECT_EQ(mappings.freed_by_unmap(kRange + kGranule, kGranule), Handles{});
  EXPECT_TRUE(mappings.is_mapped(kHandle));
  EXPECT_EQ(mappings.freed_by_unmap(kRange, 2 * kGranule), Handles{kHandle});
}

// One unmap over the mappings of two handles ends each released one.
TEST(VmmMappings, AnUnmapOverSeveralMappingsEndsEachReleasedHandle) {
  VmmMappings mappings;
  mappings.on_mapped(kRange, kGranule, kHandle);
  mappings.on_mapped(kRange + kGranule, kGranule, kHandle + 1);
  EXPECT_FALSE(mappings.after_release(kHandle));
  const Handles freed = mappings.freed_by_unmap(kRange, 2 * kGranule);
  EXPECT_EQ(freed, Handles{kHandle});
  EXPECT_EQ(mappings.on_unmapped(kRange, 2 * kGranule, freed), Handles{});
  EXPECT_FALSE(mappings.is_mapped(kHandle + 1));
  EXPECT_TRUE(mappings.after_release(kHandle + 1)) << "released after its last unmap: ends then";
}

}  // namespace
}  // namespace vramshim::runtime
