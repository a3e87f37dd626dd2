#include "shim/pool/block_address_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace vramshim::pool {
namespace {

// Blocks at the given device addresses, for the table to point at.
std::vector<Block> blocks_at(const std::vector<CUdeviceptr>& addresses) {
  std::vector<Block> blocks(addresses.size());
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i].ptr = addresses[i];
  return blocks;
}

// Checks that the table finds exactly the blocks marked present, and nothing at `absent`.
void expect_finds(const BlockAddressTable& table, std::vector<Block>& blocks,
                  const std::vector<bool>& present, CUdeviceptr absent) {
  size_t count = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(table.find(blocks[i].ptr), present[i] ? &blocks[i] : nullptr) << "block " << i;
    count += present[i] ? 1 : 0;
  }
  EXPECT_EQ(table.size(), count);
  EXPECT_EQ(table.find(absent), nullptr);
}

// Device addresses (512-byte aligned, as the pool's blocks) whose hashes share their top `bits`
// bits, so that in a table of up to 2^bits slots they all have one home and make one probe run;
// and, with `same_low_bits`, the 12 low bits the table keeps too.
std::vector<CUdeviceptr> addresses_with_one_home(size_t count, int bits, bool same_low_bits) {
  std::vector<CUdeviceptr> found;
  const uint64_t first = support::mix_key(0x7f0000000000ULL);
  for (CUdeviceptr address = 0x7f0000000000ULL; found.size() < count; address += 512) {
    const uint64_t hash = support::mix_key(address);
    if (hash >> (64 - bits) != first >> (64 - bits)) continue;
    if (same_low_bits && (hash & 0xfff) != (first & 0xfff)) continue;
    found.push_back(address);
  }
  return found;
}

TEST(BlockAddressTable, AgreesWithAReferenceUnderRandomInsertsAndErases) {
  std::mt19937_64 random(5);
  std::set<CUdeviceptr> distinct;
  while (distinct.size() < 3000) distinct.insert(0x7f0000000000ULL + (random() % 100000) * 512);
  std::vector<Block> blocks = blocks_at({distinct.begin(), distinct.end()});
  std::vector<bool> present(blocks.size(), false);
  BlockAddressTable table;
  for (int step = 0; step < 300000; ++step) {
    const size_t i = random() % blocks.size();
    if (present[i]) {
      table.erase(blocks[i].ptr);
    } else {
      table.insert(&blocks[i]);
    }
    present[i] = !present[i];
    if (step % 20000 == 0) expect_finds(table, blocks, present, 0x7f0000000000ULL + 511);
    ASSERT_EQ(table.find(blocks[i].ptr), present[i] ? &blocks[i] : nullptr) << "step " << step;
  }
  expect_finds(table, blocks, present, 0x7f0000000000ULL + 511);
  // Emptied, it finds nothing and takes blocks again.
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (present[i]) table.erase(blocks[i].ptr);
  }
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(blocks[0].ptr), nullptr);
  table.insert(&blocks[0]);
  EXPECT_EQ(table.find(blocks[0].ptr), &blocks[0]);
}

// 300 addresses of one home: the last ones lie farther from it than a slot can say (255 slots),
// and erasing in any order still moves each to where a lookup finds it.
TEST(BlockAddressTable, AProbeRunLongerThanTheStoredDistanceIsErasedInAnyOrder) {
  std::vector<Block> blocks = blocks_at(addresses_with_one_home(300, 12, false));
  std::vector<bool> present(blocks.size(), true);
  BlockAddressTable table;
  for (Block& block : blocks) table.insert(&block);
  expect_finds(table, blocks, present, 0x7f0000000000ULL + 511);
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  for (size_t n = 0; n < order.size(); ++n) {
    table.erase(blocks[order[n]].ptr);
    present[order[n]] = false;
    if (n % 10 == 0) expect_finds(table, blocks, present, 0x7f0000000000ULL + 511);
  }
  EXPECT_EQ(table.size(), 0u);
}

// A slot keeps 12 bits of its key's hash, not the key: an address whose bits match those of a
// block in the table, at the same home, is not taken for it.
TEST(BlockAddressTable, AnAddressWhoseKeptHashBitsMatchAnothersIsNotFoundForIt) {
  const std::vector<CUdeviceptr> addresses = addresses_with_one_home(3, 4, true);
  std::vector<Block> blocks = blocks_at(addresses);
  BlockAddressTable table;
  table.insert(&blocks[0]);
  table.insert(&blocks[2]);
  EXPECT_EQ(table.find(addresses[1]), nullptr);
  EXPECT_EQ(table.find(addresses[0]), &blocks[0]);
  EXPECT_EQ(table.find(addresses[2]), &blocks[2]);
  table.erase(addresses[1]);  // not there: nothing is erased
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.find(addresses[2]), &blocks[2]);
}

// 8 bytes a slot, at most 4 slots for 3 entries: a million blocks cost 16 MiB of table, not 32.
TEST(BlockAddressTable, TakesEightBytesASlot) {
  std::vector<Block> blocks(100000);
  BlockAddressTable table;
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i].ptr = 0x7f0000000000ULL + i * 512;
    table.insert(&blocks[i]);
  }
  EXPECT_EQ(table.memory_bytes(), 8 * size_t{1 << 18});  // 2^17 slots hold at most 98,304
}

TEST(BlockAddressTable, HoldsOnlySixteenByteAlignedAddressesBelowTwoToThe48) {
  alignas(16) static char memory[32];
  EXPECT_TRUE(BlockAddressTable::can_hold(memory));
  EXPECT_FALSE(BlockAddressTable::can_hold(memory + 8));
  EXPECT_FALSE(BlockAddressTable::can_hold(reinterpret_cast<void*>(uintptr_t{1} << 48)));
}

}  // namespace
}  // namespace vramshim::pool
