#include "shim/attribution/live_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace vramshim::attribution {
namespace {

LiveAllocation allocation(uint64_t key, uint64_t size) {
  return LiveAllocation{key, size, 0, 0, 0};
}

TEST(LiveTable, InsertFindEraseAndReplace) {
  LiveTable table;
  EXPECT_FALSE(table.insert(allocation(10, 1)).has_value());
  const std::optional<LiveAllocation> replaced = table.insert(allocation(10, 2));
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->size, 1u);
  EXPECT_EQ(table.find(10)->size, 2u);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.erase(10)->size, 2u);
  EXPECT_FALSE(table.erase(10).has_value());
  EXPECT_FALSE(table.find(10).has_value());
  EXPECT_EQ(table.size(), 0u);
}

// Random inserts and erases against std::unordered_map, with keys that collide within shards
// (device pointers are aligned), exercise growth and backward-shift deletion.
TEST(LiveTable, AgreesWithAReferenceMapUnderRandomOperations) {
  LiveTable table;
  std::unordered_map<uint64_t, uint64_t> reference;
  std::mt19937_64 random(3);
  for (int step = 0; step < 200000; ++step) {
    const uint64_t key = 0x7f0000000000ULL + (random() % 5000) * 512;
    if (random() % 3 != 0) {
      const uint64_t size = random();
      table.insert(allocation(key, size));
      reference[key] = size;
    } else {
      const std::optional<LiveAllocation> erased = table.erase(key);
      const auto expected = reference.find(key);
      ASSERT_EQ(erased.has_value(), expected != reference.end());
      if (erased) {
        EXPECT_EQ(erased->size, expected->second);
        reference.erase(expected);
      }
    }
  }
  EXPECT_EQ(table.size(), reference.size());
  for (const auto& [key, size] : reference) {
    const std::optional<LiveAllocation> found = table.find(key);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->size, size);
  }
}

}  // namespace
}  // namespace vramshim::attribution
