// The bookkeeping of one pool's segments and blocks: best fit, split, coalesce, and which segment
// holds an address. Pure data structure; the pool serializes access and calls the driver.
#pragma once

#include <map>
#include <vector>

#include "shim/pool/block.h"
#include "shim/pool/block_address_table.h"
#include "shim/pool/free_bins.h"
#include "shim/pool/size_policy.h"
#include "shim/support/huge_pages.h"

namespace vramshim::pool {

// The segments of one pool and the blocks they are cut into: best fit, split, coalesce. Pure
// bookkeeping: it calls no driver and takes no lock (the pool serializes access).
class BlockStore {
 public:
  explicit BlockStore(SizePolicy policy);
  ~BlockStore();
  BlockStore(const BlockStore&) = delete;
  BlockStore& operator=(const BlockStore&) = delete;

  const SizePolicy& policy() const { return policy_; }

  // Hands out the best-fitting free block for `rounded` (a multiple of 512), split when the policy
  // says so for `fit`; nullptr when no free block can serve it.
  Block* take(size_t rounded, Fit fit = Fit::kExact);
  // Like take, but only a free block of exactly `rounded` bytes.
  Block* take_exact(size_t rounded);
  // Adopts a segment just allocated from the driver and hands out `rounded` from its start. If it
  // throws (out of host memory), the store has not changed.
  Block* add_segment_and_take(CUdeviceptr base, size_t size, size_t rounded);
  // The allocated block starting at `ptr`, or nullptr.
  Block* find_allocated(CUdeviceptr ptr) const;
  // The block starting at `ptr` that was handed out at least once, whatever its state now, or
  // nullptr.
  Block* find(CUdeviceptr ptr) const;
  // Whether `ptr` lies inside a segment the store holds, whatever the state of its block.
  bool holds(CUdeviceptr ptr) const;
  // The base of the segment holding `ptr` (the driver's allocation), or 0.
  CUdeviceptr segment_base(CUdeviceptr ptr) const;
  // The program freed the allocated block starting at `ptr`: it becomes pending. nullptr when no
  // allocated block starts there.
  Block* retire(CUdeviceptr ptr);
  // A pending block may be handed out again: it joins the free bins. A large block is merged with
  // its free neighbours at once; a small one, while freed small blocks come back whole at their
  // size, is merged only when the free space must be whole (see consolidate), so the common reuse
  // of a small block at its own size splits and merges nothing.
  void make_free(Block* block);
  // Merges every small free block left unmerged with its free neighbours: afterwards no two free
  // blocks are adjacent. take() does it before it fails, detach_free_segments() before it looks
  // for wholly free segments.
  void consolidate();
  // Moves every free block to pending (appended to `pending`), for when reuse starts needing
  // fences.
  void make_all_free_pending(std::vector<Block*>* pending);

  // Detaches wholly free segments, largest first, while more than `keep_free_bytes` are free; the
  // caller hands them back to the driver.
  std::vector<Segment> detach_free_segments(size_t keep_free_bytes);
  // Takes back a segment detach_free_segments gave, which the driver did not free, as one free
  // block. If it throws (out of host memory), the store has not changed.
  void add_free_segment(const Segment& segment);
  // Forgets every block and segment. Returns the segments that held no allocated block (the caller
  // frees those); segments with allocated blocks are forgotten without a free. Appends the tag and
  // size of every allocated block with a tag to `allocated_tags`.
  std::vector<Segment> detach_all(std::vector<std::pair<uint32_t, size_t>>* allocated_tags);

  // Calls visit(head) with the first block of every segment, in address order; a segment's blocks
  // follow through `next`.
  template <typename Visit>
  void for_each_segment(Visit&& visit) const {
    for (const auto& [base, segment] : segments_) visit(*segment.head);
  }

  size_t reserved_bytes() const { return reserved_bytes_; }
  size_t free_bytes() const { return free_bytes_; }
  // The blocks of every segment, whatever their state.
  size_t block_count() const;

 private:
  FreeBins& free_bins(bool small) { return small ? small_free_ : large_free_; }
  // Makes a chunk of Blocks, all spare.
  void add_block_chunk();
  Block* new_block();
  void recycle(Block* block);
  // Puts a Block with no marks to settle among the spares.
  void recycle_unsettled(Block* block);
  // Recycles a block that merged into a neighbour or whose segment went back to the driver.
  void forget(Block* block);
  void insert_free(Block* block);
  void erase_free(Block* block);
  // Inserts a free block into the bins merged with its free neighbours.
  void merge_and_insert(Block* block);
  void defer_merge(Block* block);
  // Whether a block has a free block next to it in its segment (one to merge with).
  static bool has_free_neighbour(const Block& block) {
    return (block.prev != nullptr && block.prev->state == BlockState::kFree) ||
           (block.next != nullptr && block.next->state == BlockState::kFree);
  }
  // Whether a small block freed now should wait to be merged (see freed_reused_whole_).
  bool deferral_pays();
  // Clears a block's marks as it leaves the free state or the store, and counts whether it was
  // reused at its size: `reused_whole` when it is handed out whole.
  void settle(Block* block, bool reused_whole);
  // Drops the entries of unmerged_ that no longer stand for an unmerged block, and repeats.
  void compact_unmerged();
  // Marks a free block allocated, splitting off the part `rounded` does not need (see `fit`).
  Block* hand_out(Block* block, size_t rounded, Fit fit);

  SizePolicy policy_;
  FreeBins small_free_;
  FreeBins large_free_;
  // Every block handed out at least once since it was made, by address, whatever its state now: a
  // free block handed out again at its address (the common reuse) costs the table nothing, and a
  // free is one lookup, no erase.
  BlockAddressTable by_address_;
  // Every segment by its base address: its first block (which merges never remove) and its size.
  struct SegmentEntry {
    Block* head;
    size_t size;
  };
  std::map<CUdeviceptr, SegmentEntry> segments_;
  // The small free blocks whose merging was deferred (Block::unmerged), with stale entries for
  // blocks handed out or merged since (skipped, and dropped when the list doubles). Every pair
  // of adjacent free blocks has at least one of them here, so merging these merges everything.
  std::vector<Block*> unmerged_;
  size_t unmerged_count_ = 0;  // blocks marked unmerged
  size_t compact_unmerged_at_ = 0;
  // Whether deferring pays, over the recent small blocks left free at their size (deferred, or
  // without a free neighbour; Block::reuse_watched): how many were handed out again whole (the
  // reuse at one size that deferral is for: nothing split or merged) and how many were split or
  // merged all the same (sizes that do not repeat, where deferral only adds an insert and an erase
  // of the free bins). Both are halved as they grow, so they follow what the program does now.
  uint32_t freed_reused_whole_ = 0;
  uint32_t freed_in_vain_ = 0;
  uint32_t merged_at_once_ = 0;  // blocks merged at once while deferral did not pay
  // Block objects, made a chunk at a time (no malloc header per block), and kept for reuse, so the
  // hot path does not call malloc. Each chunk holds twice the last while it fits half a huge page,
  // then a whole huge page of them (none of a page left unused).
  using BlockChunk = std::vector<Block, support::HugePageAllocator<Block>>;
  std::vector<BlockChunk> block_chunks_;
  // The spare Blocks, linked through `next`.
  Block* spare_blocks_ = nullptr;
  size_t spare_count_ = 0;
  size_t reserved_bytes_ = 0;
  size_t free_bytes_ = 0;
  // Free blocks that are whole segments: without one, detach_free_segments has nothing to look
  // for (it is asked on every growth while a program climbs to its peak).
  size_t whole_free_segments_ = 0;
};

}  // namespace vramshim::pool
