// What a ThreadCache keeps, alone: bins of one size each that grow as they run dry, handed-out
// blocks found by address (pushed-out ones set aside, still found when taken back), freed blocks
// up to their bounds, and credit.
#include "shim/pool/thread_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace vramshim::pool {
namespace {

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 32;

// Blocks of `size` bytes side by side from kBase.
std::vector<Block> blocks(size_t count, size_t size) {
  std::vector<Block> made(count);
  for (size_t i = 0; i < count; ++i) {
    made[i].ptr = kBase + i * size;
    made[i].size = size;
  }
  return made;
}

TEST(ThreadCache, ABinServesOneSizeAndKeepsMoreEachTimeItRunsDry) {
  ThreadCache cache(1);
  EXPECT_FALSE(cache.bin_is_for(4096));
  cache.claim_bin(4096);
  ASSERT_TRUE(cache.bin_is_for(4096));
  EXPECT_FALSE(cache.may_serve(4096));  // claimed, still empty
  EXPECT_EQ(cache.ready_room(4096), 1u);
  for (size_t target : {2u, 4u, 8u, 16u, 32u, 64u, 64u}) {
    cache.found_empty(4096);
    EXPECT_EQ(cache.ready_room(4096), target);
  }
  std::vector<Block> made = blocks(64, 4096);
  for (Block& block : made) cache.keep_ready(&block);
  EXPECT_EQ(cache.ready_room(4096), 0u);
  EXPECT_EQ(cache.ready_bytes(), 64u * 4096);
  EXPECT_TRUE(cache.may_serve(4096));
  // The bin of 4 KiB is also the bin of 12 KiB (16 bins by size): taken, it serves no other size.
  EXPECT_FALSE(cache.may_serve(12288));
  EXPECT_EQ(cache.ready_room(12288), 0u);
  cache.claim_bin(12288);
  EXPECT_TRUE(cache.bin_is_for(4096));
  EXPECT_EQ(cache.take_ready(12288), nullptr);
  EXPECT_EQ(cache.take_ready(4096), &made.back());
  // 256 KiB at most: a bin of 64 KiB blocks keeps 4.
  ThreadCache large(2);
  large.claim_bin(65536);
  for (int i = 0; i < 5; ++i) large.found_empty(65536);
  EXPECT_EQ(large.ready_room(65536), 4u);
}

TEST(ThreadCache, AHandedBlockPushedOutOfItsSlotIsStillTakenBack) {
  ThreadCache cache(1);
  std::vector<Block> made = blocks(4 * ThreadCache::kLiveSlots, 512);
  size_t remembered = 0;
  for (Block& block : made) {
    if (!cache.can_remember(block.ptr)) break;
    cache.remember_handed({&block, block.ptr}, 512, 7, 3);
    ++remembered;
  }
  // The slots fill and kEvicted more are set aside before a locked call must empty them.
  EXPECT_GT(remembered, ThreadCache::kEvicted);
  EXPECT_LE(remembered, ThreadCache::kLiveSlots + ThreadCache::kEvicted);
  size_t found = 0, taken = 0;
  for (size_t i = 0; i < remembered; ++i) {
    if (cache.find_handed(made[i].ptr) != nullptr) {
      EXPECT_TRUE(cache.may_take_back(made[i].ptr));
      ++found;
    }
  }
  for (size_t i = 0; i < remembered; ++i) {
    ThreadCache::Handed handed;
    if (!cache.take_handed(made[i].ptr, &handed)) continue;
    EXPECT_EQ(handed.block, &made[i]);
    EXPECT_EQ(handed.request, 7u);
    EXPECT_EQ(handed.tag, 3u);
    ++taken;
  }
  EXPECT_EQ(taken, remembered) << "every handed block is taken back, pushed out or not";
  EXPECT_LT(found, remembered) << "some were pushed out of their slot";
  ThreadCache::Handed none;
  EXPECT_FALSE(cache.take_handed(made[0].ptr, &none));
  EXPECT_FALSE(cache.may_take_back(made[0].ptr));
}

TEST(ThreadCache, FreedBlocksAreBoundedAndBecomeReadyWhereTheirBinHasRoom) {
  ThreadCache cache(1);
  std::vector<Block> made = blocks(ThreadCache::kPendingBlocks + 1, 4096);
  for (size_t i = 0; i < ThreadCache::kPendingBlocks; ++i) {
    ASSERT_TRUE(cache.pending_room(4096));
    cache.keep_pending({&made[i], made[i].ptr}, 4096);
  }
  EXPECT_FALSE(cache.pending_room(4096));
  EXPECT_EQ(cache.pending_bytes(), ThreadCache::kPendingBlocks * 4096);
  ThreadCache big(2);
  std::vector<Block> large = blocks(9, size_t{1} << 20);
  for (size_t i = 0; i < 8; ++i) big.keep_pending({&large[i], large[i].ptr}, size_t{1} << 20);
  EXPECT_FALSE(big.pending_room(size_t{1} << 20));  // 8 MiB at most
  // The bin of 4 KiB keeps 4 of them (its target now); the rest go back.
  cache.claim_bin(4096);
  cache.found_empty(4096);
  cache.found_empty(4096);
  size_t given_back = 0;
  cache.ready_pending([&given_back](Block*) { ++given_back; });
  EXPECT_EQ(given_back, ThreadCache::kPendingBlocks - 4);
  EXPECT_EQ(cache.ready_bytes(), 4u * 4096);
  EXPECT_EQ(cache.pending_bytes(), 0u);
  EXPECT_TRUE(cache.pending_room(4096));
}

TEST(ThreadCache, CreditAndHitsAreOwedUntilTaken) {
  ThreadCache cache(1);
  EXPECT_FALSE(cache.owes());
  cache.earn(8192);
  cache.spend(4096);
  cache.count_hit();
  EXPECT_TRUE(cache.owes());
  EXPECT_EQ(cache.credit(), 4096u);
  const ThreadCache::Owed owed = cache.take_owed();
  EXPECT_EQ(owed.credit, 4096u);
  EXPECT_EQ(owed.hits, 1u);
  EXPECT_FALSE(cache.owes());
  EXPECT_EQ(cache.credit(), 0u);
}

}  // namespace
}  // namespace vramshim::pool
