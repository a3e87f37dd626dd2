#include "shim/pool/block_store.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

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

TEST(BlockStore, ASmallBlockAnEighthLargerAtMostIsHandedOutWholeWhereTheFitMayBeLoose) {
  constexpr size_t kKiB = 1024;
  BlockStore store{SizePolicy()};
  Block* freed = store.add_segment_and_take(kBase, 2 * kMiB, 72 * kKiB);
  ASSERT_NE(store.take(512), nullptr);  // an allocated neighbour: the freed block stays 72 KiB
  auto free_again = [&](Block* block) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  };
  free_again(freed);
  const size_t blocks = store.block_count();
  Block* loose = store.take(64 * kKiB, Fit::kSlack);
  ASSERT_EQ(loose, freed);
  EXPECT_EQ(loose->size, 72 * kKiB);
  EXPECT_EQ(loose->requested, 64 * kKiB);
  EXPECT_EQ(store.block_count(), blocks);  // nothing split off
  // Freed, it comes back whole: its own size takes it without a split.
  free_again(loose);
  Block* whole = store.take(72 * kKiB, Fit::kSlack);
  ASSERT_EQ(whole, freed);
  EXPECT_EQ(whole->size, 72 * kKiB);
  // More than an eighth over the request, or an exact fit asked for: split.
  for (const auto& [rounded, fit] :
       {std::pair{64 * kKiB - 512, Fit::kSlack}, std::pair{64 * kKiB, Fit::kExact}}) {
    BlockStore fresh{SizePolicy()};
    Block* block = fresh.add_segment_and_take(kBase, 2 * kMiB, 72 * kKiB);
    ASSERT_NE(fresh.take(512), nullptr);
    ASSERT_EQ(fresh.retire(block->ptr), block);
    fresh.make_free(block);
    const size_t before = fresh.block_count();
    Block* split = fresh.take(rounded, fit);
    ASSERT_EQ(split, block);
    EXPECT_EQ(split->size, rounded);
    EXPECT_EQ(fresh.block_count(), before + 1);
  }
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
  ASSERT_FALSE(pending.empty());  // the freed block, and the rest of the segment
  EXPECT_EQ(store.free_bytes(), 0u);
  EXPECT_TRUE(store.detach_free_segments(0).empty());
  EXPECT_EQ(store.take(512), nullptr);
  for (Block* block : pending) store.make_free(block);
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
    store.consolidate();
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

TEST(BlockStore, ASmallBlockFreedIsHandedOutAgainAtItsAddressWithoutSplitting) {
  BlockStore store{SizePolicy()};
  Block* first = store.add_segment_and_take(kBase, 2 * kMiB, 4096);
  Block* second = store.take(4096);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(store.retire(second->ptr), second);
  store.make_free(second);
  Block* again = store.take(4096);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->ptr, kBase + 4096);
  EXPECT_EQ(again->size, 4096u);
  EXPECT_NE(first, nullptr);
}

TEST(BlockStore, SmallBlocksLeftUnmergedStillServeALargerRequestWhole) {
  BlockStore store{SizePolicy()};
  std::vector<Block*> blocks{store.add_segment_and_take(kBase, 2 * kMiB, 4096)};
  while (Block* block = store.take(4096)) blocks.push_back(block);
  ASSERT_EQ(blocks.size(), 512u);
  for (Block* block : blocks) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  }
  // No free block of 1 MiB exists until the 4 KiB ones are merged: take merges before it fails.
  Block* large = store.take(kMiB);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(large->ptr, kBase);
  EXPECT_EQ(store.take(kMiB)->ptr, kBase + kMiB);
  EXPECT_EQ(store.take(512), nullptr);
}

// The blocks of the segment at `base`, in address order: their sizes and whether each is free.
std::vector<std::pair<size_t, bool>> segment_blocks(const BlockStore& store, CUdeviceptr base) {
  std::vector<std::pair<size_t, bool>> blocks;
  store.for_each_segment([&](const Block& head) {
    if (head.ptr != base) return;
    for (const Block* block = &head; block != nullptr; block = block->next) {
      blocks.emplace_back(block->size, block->state == BlockState::kFree);
    }
  });
  return blocks;
}

// Frees `block` and returns the blocks of its segment just after (no take, no consolidate).
std::vector<std::pair<size_t, bool>> free_and_look(BlockStore& store, Block* block,
                                                   CUdeviceptr base) {
  EXPECT_EQ(store.retire(block->ptr), block);
  store.make_free(block);
  return segment_blocks(store, base);
}

// A churn of small requests: `pairs` times, frees a random one of `live` blocks and takes one of
// `next_size()` bytes, giving the store a new 2 MiB segment (never adjacent) when nothing serves
// it.
template <typename NextSize>
void churn(BlockStore& store, std::vector<Block*>& live, int pairs, NextSize next_size,
           std::mt19937_64& random, CUdeviceptr* next_segment) {
  auto take = [&](size_t size) {
    if (Block* block = store.take(size)) return block;
    const CUdeviceptr base = *next_segment;
    *next_segment += 4 * kMiB;
    return store.add_segment_and_take(base, 2 * kMiB, size);
  };
  for (int pair = 0; pair < pairs; ++pair) {
    Block*& slot = live[random() % live.size()];
    ASSERT_EQ(store.retire(slot->ptr), slot);
    store.make_free(slot);
    slot = take(next_size());
  }
}

// A freed small block whose neighbours are both allocated has nothing to merge with: it joins the
// free bins as it is, and consolidating (which visits every block on the list) never looks at it.
// Its free neighbour, freed later, goes on the list (with the store freshly made, deferral pays).
TEST(BlockStore, AFreedSmallBlockWithoutAFreeNeighbourIsLeftOffTheListOfBlocksToMerge) {
  BlockStore store{SizePolicy()};
  Block* a = store.add_segment_and_take(kBase, 2 * kMiB, 4096);
  Block* b = store.take(4096);
  Block* c = store.take(4096);
  ASSERT_EQ(store.retire(b->ptr), b);
  store.make_free(b);
  EXPECT_EQ(b->state, BlockState::kFree);
  EXPECT_FALSE(b->unmerged) << "a and c are allocated";
  ASSERT_EQ(store.retire(a->ptr), a);
  store.make_free(a);
  EXPECT_TRUE(a->unmerged) << "b is free";
  // Merging still makes the free space whole.
  ASSERT_EQ(store.retire(c->ptr), c);
  store.make_free(c);
  store.consolidate();
  EXPECT_EQ(store.block_count(), 1u);
  EXPECT_EQ(store.free_bytes(), 2 * kMiB);
}

// Deferring a small block's merge pays only when freed blocks come back whole at their own size;
// when the sizes freed do not repeat, a freed block waits in the bins only to be taken out and
// merged later (random sizes: 12 % of the pool's churn). The store merges at once then, and defers
// again once sizes repeat.
TEST(BlockStore, ASmallBlockIsMergedOnFreeOnlyWhileFreedSizesDoNotComeBack) {
  BlockStore store{SizePolicy()};
  std::mt19937_64 random(11);
  CUdeviceptr next_segment = kBase + 4 * kMiB;
  std::vector<Block*> live{store.add_segment_and_take(kBase, 2 * kMiB, 4096)};
  while (live.size() < 200) live.push_back(store.take(4096));
  auto fixed = [] { return size_t{4096}; };
  auto varied = [&] { return SizePolicy::round(512 + random() % kMiB); };
  auto probe = [&] {
    // A fresh segment's first block, freed next to the free rest of its segment.
    const CUdeviceptr base = next_segment;
    next_segment += 4 * kMiB;
    return free_and_look(store, store.add_segment_and_take(base, 2 * kMiB, 4096), base);
  };
  using Blocks = std::vector<std::pair<size_t, bool>>;
  const Blocks deferred = {{4096, true}, {2 * kMiB - 4096, true}};
  const Blocks merged = {{2 * kMiB, true}};

  churn(store, live, 2000, fixed, random, &next_segment);
  EXPECT_EQ(probe(), deferred) << "4 KiB freed and taken again: deferral pays";
  churn(store, live, 4000, varied, random, &next_segment);
  // One probe in eight is deferred all the same, to notice when sizes repeat again.
  int merged_probes = 0;
  for (int i = 0; i < 8; ++i) merged_probes += probe() == merged;
  EXPECT_GE(merged_probes, 6) << "sizes from 0.5 KiB to 1 MiB: merged at once";
  churn(store, live, 4000, fixed, random, &next_segment);
  EXPECT_EQ(probe(), deferred) << "back to 4 KiB: deferred again";
}

// The rule deferred merging must keep: once consolidated, no two free blocks are adjacent, so
// free space is never lost to fragments the store forgot to merge, and a store freed whole gives
// every segment back.
TEST(BlockStore, AfterConsolidatingNoTwoFreeBlocksAreAdjacent) {
  BlockStore store{SizePolicy()};
  std::mt19937_64 random(7);
  std::vector<Block*> live;
  constexpr int kSegments = 4;
  for (int s = 0; s < kSegments; ++s) {
    live.push_back(store.add_segment_and_take(kBase + s * 4 * kMiB, 2 * kMiB, 512));
  }
  auto expect_merged = [&](int step) {
    store.consolidate();
    size_t free_bytes = 0;
    store.for_each_segment([&](const Block& head) {
      for (const Block* block = &head; block != nullptr; block = block->next) {
        if (block->state != BlockState::kFree) continue;
        free_bytes += block->size;
        ASSERT_FALSE(block->next && block->next->state == BlockState::kFree)
            << "adjacent free blocks at step " << step;
      }
    });
    ASSERT_EQ(free_bytes, store.free_bytes()) << "step " << step;
  };
  for (int step = 0; step < 20000; ++step) {
    const bool allocate = live.empty() || random() % 100 < 52;
    if (allocate) {
      const size_t size = SizePolicy::round(512 + random() % (64 * 1024));
      if (Block* block = store.take(size)) live.push_back(block);
    } else {
      const size_t index = random() % live.size();
      Block* block = live[index];
      live[index] = live.back();
      live.pop_back();
      ASSERT_EQ(store.retire(block->ptr), block);
      store.make_free(block);
    }
    if (step % 97 == 0) expect_merged(step);
  }
  for (Block* block : live) {
    ASSERT_EQ(store.retire(block->ptr), block);
    store.make_free(block);
  }
  expect_merged(-1);
  EXPECT_EQ(store.detach_free_segments(0).size(), size_t{kSegments});
  EXPECT_EQ(store.reserved_bytes(), 0u);
}

}  // namespace
}  // namespace vramshim::pool
