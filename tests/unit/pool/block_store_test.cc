#include "shim/pool/block_store.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr CUdeviceptr kBase = 0x10000000;

TEST(BlockStore, CarvesSmallRequestsOutOfOneSegment) {
  BlockStore store{SizePolicy()};
  Block* first = store.add_segment_and_take(kBase, 2 * kMiB, 512);
  Block* second = store.take(1024);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->ptr, kBase);
  EXPECT_EQ(second->ptr, kBase + 512);
  EXPECT_EQ(store.free_bytes(), 2 * kMiB - 1536);
  EXPECT_EQ(store.reserved_bytes(), 2 * kMiB);
}

TEST(BlockStore, FreedNeighboursCoalesceIntoTheWholeSegment) {
  BlockStore store{SizePolicy()};
  Block* a = store.add_segment_and_take(kBase, 2 * kMiB, 512);
  Block* b = store.take(512);
  Block* c = store.take(512);
  for (Block* block : {a, c, b}) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  }
  EXPECT_EQ(store.free_bytes(), 2 * kMiB);
  const std::vector<Segment> released = store.detach_free_segments(0);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ptr, kBase);
  EXPECT_EQ(released[0].size, 2 * kMiB);
  EXPECT_EQ(store.reserved_bytes(), 0u);
}

TEST(BlockStore, BestFitPicksTheSmallestBlockThatServes) {
  BlockStore store{SizePolicy()};
  Block* big = store.add_segment_and_take(kBase, 40 * kMiB, 40 * kMiB);
  Block* fitting = store.add_segment_and_take(kBase + 64 * kMiB, 12 * kMiB, 12 * kMiB);
  for (Block* block : {big, fitting}) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  }
  Block* taken = store.take(11 * kMiB + 512);
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(taken->ptr, kBase + 64 * kMiB);
  EXPECT_EQ(taken->size, 12 * kMiB);  // within 1 MiB: handed out whole
}

TEST(BlockStore, TakeExactTakesOnlyABlockOfThatSize) {
  BlockStore store{SizePolicy()};
  Block* smaller = store.add_segment_and_take(kBase, 12 * kMiB, 12 * kMiB);
  Block* larger = store.add_segment_and_take(kBase + 64 * kMiB, 16 * kMiB, 16 * kMiB);
  for (Block* block : {smaller, larger}) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  }
  EXPECT_EQ(store.take_exact(14 * kMiB), nullptr);
  EXPECT_EQ(store.take_exact(16 * kMiB), larger);
  EXPECT_EQ(store.take_exact(12 * kMiB), smaller);
  EXPECT_EQ(store.free_bytes(), 0u);
}

TEST(BlockStore, SplitsALargeCachedBlock) {
  BlockStore store{SizePolicy()};
  Block* big = store.add_segment_and_take(kBase, 64 * kMiB, 64 * kMiB);
  ASSERT_EQ(store.retire(big->ptr), big);
  store.make_free(big);
  Block* part = store.take(16 * kMiB);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->size, 16 * kMiB);
  EXPECT_EQ(store.free_bytes(), 48 * kMiB);
  EXPECT_TRUE(store.detach_free_segments(0).empty());  // the segment still has a live block
}

TEST(BlockStore, PendingBlocksAreNotHandedOut) {
  BlockStore store{SizePolicy()};
  Block* block = store.add_segment_and_take(kBase, 32 * kMiB, 32 * kMiB);
  ASSERT_EQ(store.retire(block->ptr), block);
  EXPECT_EQ(store.take(32 * kMiB), nullptr);
  store.make_free(block);
  EXPECT_EQ(store.take(32 * kMiB), block);
}

TEST(BlockStore, ASegmentMadePendingIsDetachedOnlyOnceFreeAgain) {
  BlockStore store{SizePolicy()};
  Block* block = store.add_segment_and_take(kBase, 2 * kMiB, 512);
  ASSERT_EQ(store.retire(block->ptr), block);
  store.make_free(block);
  std::vector<Block*> pending;
  store.make_all_free_pending(&pending);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(store.free_bytes(), 0u);
  EXPECT_TRUE(store.detach_free_segments(0).empty());
  EXPECT_EQ(store.take(512), nullptr);
  store.make_free(pending[0]);
  const std::vector<Segment> released = store.detach_free_segments(0);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ptr, kBase);
  EXPECT_EQ(store.reserved_bytes(), 0u);
}

TEST(BlockStore, ABlockIsFoundOnlyWhileAllocated) {
  BlockStore store{SizePolicy()};
  Block* block = store.add_segment_and_take(kBase, 2 * kMiB, 4096);
  EXPECT_EQ(store.find_allocated(kBase), block);
  ASSERT_EQ(store.retire(kBase), block);
  EXPECT_EQ(store.retire(kBase), nullptr);  // pending
  store.make_free(block);
  EXPECT_EQ(store.retire(kBase), nullptr);  // free
  EXPECT_EQ(store.find_allocated(kBase), nullptr);
  EXPECT_EQ(store.take(4096), block);
  EXPECT_EQ(store.find_allocated(kBase), block);
}

TEST(BlockStore, TheAddressOfAMergedBlockFindsNothing) {
  for (bool second_first : {false, true}) {  // merged into its previous block, or absorbed by it
    BlockStore store{SizePolicy()};
    Block* first = store.add_segment_and_take(kBase, 2 * kMiB, 512);
    Block* second = store.take(512);
    for (Block* block :
         second_first ? std::vector<Block*>{second, first} : std::vector<Block*>{first, second}) {
      ASSERT_EQ(store.retire(block->ptr), block);
      store.make_free(block);
    }
    // The Block objects the merges gave up serve blocks of another segment.
    store.add_segment_and_take(kBase + 64 * kMiB, 2 * kMiB, 512);
    ASSERT_NE(store.take(512), nullptr);
    EXPECT_EQ(store.find_allocated(kBase + 512), nullptr) << second_first;
    EXPECT_EQ(store.retire(kBase + 512), nullptr) << second_first;
    EXPECT_TRUE(store.holds(kBase + 512));
  }
}

TEST(BlockStore, DetachAllReturnsOnlySegmentsWithoutAllocatedBlocksAndTheirTags) {
  BlockStore store{SizePolicy()};
  store.add_segment_and_take(kBase, 32 * kMiB, 32 * kMiB)->tag = 7;
  Block* freed = store.add_segment_and_take(kBase + 64 * kMiB, 32 * kMiB, 32 * kMiB);
  ASSERT_EQ(store.retire(freed->ptr), freed);
  std::vector<std::pair<uint32_t, size_t>> tags;
  const std::vector<Segment> unused = store.detach_all(&tags);
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0], std::make_pair(uint32_t{7}, size_t{32 * kMiB}));
  ASSERT_EQ(unused.size(), 1u);
  EXPECT_EQ(unused[0].ptr, kBase + 64 * kMiB);
  EXPECT_EQ(store.reserved_bytes(), 0u);
  EXPECT_EQ(store.find_allocated(kBase), nullptr);
}

}  // namespace
}  // namespace vramshim::pool
