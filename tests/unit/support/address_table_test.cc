#include "shim/support/address_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace vramshim::support {
namespace {

struct Entry {
  uint64_t key;
  uint64_t value;
};

TEST(AddressTable, InsertFindEraseAndReplace) {
  AddressTable<Entry> table;
  EXPECT_EQ(table.find(10), nullptr);
  EXPECT_FALSE(table.erase(10).has_value());
  EXPECT_FALSE(table.insert({10, 1}).has_value());
  const std::optional<Entry> replaced = table.insert({10, 2});
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->value, 1u);
  ASSERT_NE(table.find(10), nullptr);
  EXPECT_EQ(table.find(10)->value, 2u);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.erase(10)->value, 2u);
  EXPECT_EQ(table.find(10), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

TEST(AddressTable, ClearForgetsEveryEntryAndStaysUsable) {
  AddressTable<Entry> table;
  for (uint64_t key = 1; key <= 100; ++key) table.insert({key * 512, key});
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(512), nullptr);
  table.insert({512, 7});
  EXPECT_EQ(table.find(512)->value, 7u);
}

// One table (no sharding) under random inserts and erases of aligned addresses, against
// std::unordered_map: long probe runs that wrap around the end exercise growth and backward-shift
// deletion.
TEST(AddressTable, AgreesWithAReferenceMapUnderRandomOperations) {
  AddressTable<Entry> table;
  std::unordered_map<uint64_t, uint64_t> reference;
  std::mt19937_64 random(5);
  for (int step = 0; step < 300000; ++step) {
    const uint64_t key = 0x7f0000000000ULL + (random() % 3000) * 512;
    if (random() % 2 == 0) {
      const uint64_t value = random();
      const std::optional<Entry> replaced = table.insert({key, value});
      ASSERT_EQ(replaced.has_value(), reference.count(key) == 1);
      reference[key] = value;
    } else {
      const std::optional<Entry> erased = table.erase(key);
      const auto expected = reference.find(key);
      ASSERT_EQ(erased.has_value(), expected != reference.end());
      if (erased) {
        EXPECT_EQ(erased->value, expected->second);
        reference.erase(expected);
      }
    }
    if (step % 1000 == 0) {
      ASSERT_EQ(table.size(), reference.size());
    }
  }
  for (const auto& [key, value] : reference) {
    const Entry* found = table.find(key);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->value, value);
  }
}

}  // namespace
}  // namespace vramshim::support
