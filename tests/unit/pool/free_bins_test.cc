#include "shim/pool/free_bins.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace vramshim::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Blocks that outlive the bins that hold them; ptr only orders blocks, so blocks may overlap.
class Blocks {
 public:
  Block* make(size_t size, CUdeviceptr ptr) {
    blocks_.push_back(std::make_unique<Block>());
    blocks_.back()->size = size;
    blocks_.back()->ptr = ptr;
    return blocks_.back().get();
  }

 private:
  std::vector<std::unique_ptr<Block>> blocks_;
};

TEST(FreeBins, BestFitIsTheSmallestBlockThatServes) {
  Blocks blocks;
  FreeBins bins;
  EXPECT_EQ(bins.best_fit(512), nullptr);
  Block* small = blocks.make(4096, 0x1000);
  Block* mid = blocks.make(3 * kMiB, 0x2000);
  Block* large = blocks.make(40 * kMiB, 0x3000);
  for (Block* block : {large, small, mid}) bins.insert(block);
  EXPECT_EQ(bins.best_fit(512), small);
  EXPECT_EQ(bins.best_fit(4096), small);
  EXPECT_EQ(bins.best_fit(4096 + 512), mid);
  EXPECT_EQ(bins.best_fit(3 * kMiB), mid);
  EXPECT_EQ(bins.best_fit(3 * kMiB + 512), large);
  EXPECT_EQ(bins.best_fit(40 * kMiB + 512), nullptr);
  bins.erase(mid);
  EXPECT_EQ(bins.best_fit(4096 + 512), large);
}

TEST(FreeBins, ASizeClassAbove1MiBHoldsSmallerAndLargerBlocks) {
  // From 64 MiB a class spans 1 MiB: [64 MiB, 65 MiB) holds blocks on both sides of 64 MiB + 1 KiB.
  Blocks blocks;
  FreeBins bins;
  Block* below = blocks.make(64 * kMiB + 512, 0x1000);
  Block* above = blocks.make(65 * kMiB - 512, 0x2000);
  Block* next_class = blocks.make(66 * kMiB, 0x3000);
  for (Block* block : {next_class, above, below}) bins.insert(block);
  EXPECT_EQ(bins.best_fit(64 * kMiB + 1024), above);
  EXPECT_EQ(bins.best_fit(65 * kMiB), next_class);
  EXPECT_EQ(bins.best_fit(64 * kMiB), below);
}

TEST(FreeBins, AmongEqualSizesAbove1MiBTheLowestAddress) {
  Blocks blocks;
  FreeBins bins;
  std::vector<Block*> equal;
  for (CUdeviceptr ptr : {0x5000, 0x1000, 0x9000, 0x3000}) {
    equal.push_back(blocks.make(20 * kMiB, ptr));
    bins.insert(equal.back());
  }
  EXPECT_EQ(bins.best_fit(20 * kMiB)->ptr, 0x1000u);
  bins.erase(equal[1]);
  EXPECT_EQ(bins.best_fit(20 * kMiB)->ptr, 0x3000u);
}

TEST(FreeBins, HoldsSizesUpToTheLargestSizeT) {
  Blocks blocks;
  FreeBins bins;
  Block* huge = blocks.make(~size_t{0} & ~size_t{511}, 0x1000);
  Block* large = blocks.make(size_t{1} << 47, 0x2000);
  bins.insert(huge);
  bins.insert(large);
  EXPECT_EQ(bins.best_fit(512), large);
  EXPECT_EQ(bins.best_fit((size_t{1} << 47) + 512), huge);
  EXPECT_EQ(bins.best_fit(~size_t{0} & ~size_t{511}), huge);
}

TEST(FreeBins, ForEachVisitsEveryBlockAndClearEmpties) {
  Blocks blocks;
  FreeBins bins;
  std::set<Block*> inserted;
  for (size_t i = 1; i <= 300; ++i) {
    Block* block = blocks.make(i * 37 * 512, i * 0x1000);
    bins.insert(block);
    inserted.insert(block);
  }
  std::set<Block*> visited;
  bins.for_each([&visited](Block* block) { EXPECT_TRUE(visited.insert(block).second); });
  EXPECT_EQ(visited, inserted);
  bins.clear();
  EXPECT_EQ(bins.best_fit(512), nullptr);
  size_t count = 0;
  bins.for_each([&count](Block*) { ++count; });
  EXPECT_EQ(count, 0u);
}

// Random inserts, erases and queries against an ordered set of (size, address): the best fit has
// the set's lower_bound size, and above 1 MiB its address too.
TEST(FreeBins, AgreesWithAnOrderedSet) {
  Blocks blocks;
  FreeBins bins;
  std::set<std::pair<size_t, CUdeviceptr>> reference;
  std::vector<Block*> present;
  std::mt19937_64 random(7);
  // Sizes concentrated on a few values, so that classes hold many blocks and equal sizes.
  auto random_size = [&random] {
    switch (random() % 4) {
      case 0:
        return size_t{512} * (1 + random() % 8);
      case 1:
        return size_t{512} * (1 + random() % 8192);  // up to 4 MiB: both sides of 1 MiB
      case 2:
        return 20 * kMiB + size_t{512} * (random() % 64);
      default:
        return size_t{512} << (random() % 30);
    }
  };
  CUdeviceptr next_ptr = 0x10000;
  for (int step = 0; step < 200000; ++step) {
    const uint64_t action = random() % 8;
    if (action < 3 || present.empty()) {
      Block* block = blocks.make(
          random_size(), random() % 4 == 0 ? 0x1000 * (random() % 64) : (next_ptr += 0x1000));
      if (reference.count({block->size, block->ptr}) != 0) continue;
      bins.insert(block);
      reference.insert({block->size, block->ptr});
      present.push_back(block);
    } else if (action < 5) {
      const size_t index = random() % present.size();
      Block* block = present[index];
      bins.erase(block);
      reference.erase({block->size, block->ptr});
      present[index] = present.back();
      present.pop_back();
    } else {
      const size_t size = random_size();
      Block* fit = bins.best_fit(size);
      const auto expected = reference.lower_bound({size, 0});
      if (expected == reference.end()) {
        ASSERT_EQ(fit, nullptr) << "step " << step << ", size " << size;
        continue;
      }
      ASSERT_NE(fit, nullptr) << "step " << step << ", size " << size;
      ASSERT_EQ(fit->size, expected->first) << "step " << step << ", size " << size;
      if (fit->size > kMiB) {
        ASSERT_EQ(fit->ptr, expected->second) << "step " << step;
      }
      ASSERT_EQ(reference.count({fit->size, fit->ptr}), 1u) << "step " << step;
    }
  }
  size_t count = 0;
  bins.for_each([&count](Block*) { ++count; });
  EXPECT_EQ(count, reference.size());
}

}  // namespace
}  // namespace vramshim::pool
