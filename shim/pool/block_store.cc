#include "shim/pool/block_store.h"

#include <algorithm>
#include <new>

namespace vramshim::pool {

BlockStore::BlockStore(SizePolicy policy) : policy_(policy) {}

namespace {

constexpr size_t kFirstChunkBlocks = 256;
constexpr size_t kHugePageBlocks = support::kHugePageBytes / sizeof(Block);
// The unmerged list is compacted when it reaches this many entries, or twice what the last
// compaction kept.
constexpr size_t kUnmergedCompactionFloor = 1024;
// About how many freed blocks the choice to defer merging looks back on.
constexpr uint32_t kDeferralWindow = 256;

}  // namespace

BlockStore::~BlockStore() = default;

void BlockStore::add_block_chunk() {
  size_t count = block_chunks_.empty() ? kFirstChunkBlocks : 2 * block_chunks_.back().size();
  // A chunk in huge pages fills its page: a chunk of 1.5 MiB would leave a quarter unused.
  if (support::in_huge_pages(count * sizeof(Block))) count = kHugePageBlocks;
  BlockChunk& chunk = block_chunks_.emplace_back(count);
  if (!BlockAddressTable::can_hold(chunk.data()) ||
      !BlockAddressTable::can_hold(chunk.data() + count)) {
    block_chunks_.pop_back();
    throw std::bad_alloc();  // never seen: an address the table cannot keep
  }
  for (size_t i = count; i > 0; --i) recycle_unsettled(&chunk[i - 1]);
}

size_t BlockStore::block_count() const {
  size_t made = 0;
  for (const BlockChunk& chunk : block_chunks_) made += chunk.size();
  return made - spare_count_;
}

Block* BlockStore::new_block() {
  if (spare_blocks_ == nullptr) add_block_chunk();
  Block* block = spare_blocks_;
  spare_blocks_ = block->next;
  --spare_count_;
  *block = Block{};
  return block;
}

void BlockStore::recycle(Block* block) {
  settle(block, /*reused_whole=*/false);  // its entry in unmerged_, if any, is stale now
  recycle_unsettled(block);
}

void BlockStore::recycle_unsettled(Block* block) {
  block->next = spare_blocks_;
  spare_blocks_ = block;
  ++spare_count_;
}

void BlockStore::forget(Block* block) {
  if (block->addressed) by_address_.erase(block->ptr);
  recycle(block);
}

void BlockStore::insert_free(Block* block) {
  block->state = BlockState::kFree;
  free_bins(block->small).insert(block);
  free_bytes_ += block->size;
  if (block->is_whole_segment()) ++whole_free_segments_;
}

void BlockStore::erase_free(Block* block) {
  free_bins(block->small).erase(block);
  free_bytes_ -= block->size;
  if (block->is_whole_segment()) --whole_free_segments_;
}

Block* BlockStore::take(size_t rounded, Fit fit) {
  FreeBins& bins = free_bins(policy_.is_small(rounded));
  Block* block = bins.best_fit(rounded);
  // Merging cannot make a block larger than the free bytes of the whole pool.
  if (block == nullptr && policy_.is_small(rounded) && unmerged_count_ > 0 &&
      free_bytes_ >= rounded) {
    consolidate();
    block = bins.best_fit(rounded);
  }
  if (block == nullptr || !policy_.can_serve(block->size, rounded)) return nullptr;
  erase_free(block);
  return hand_out(block, rounded, fit);
}

Block* BlockStore::take_exact(size_t rounded) {
  Block* block = free_bins(policy_.is_small(rounded)).best_fit(rounded);
  if (block == nullptr || block->size != rounded) return nullptr;
  erase_free(block);
  return hand_out(block, rounded, Fit::kExact);
}

Block* BlockStore::add_segment_and_take(CUdeviceptr base, size_t size, size_t rounded) {
  // Whatever needs host memory is allocated first, the segment's entry last: if any of it fails,
  // the store has not changed (the room made is kept for later).
  const bool small = policy_.is_small(rounded);
  if (spare_count_ < 2) add_block_chunk();
  by_address_.make_room_for_one();
  if (policy_.should_split(small, size, rounded, Fit::kExact)) {
    free_bins(small).make_room_for(size - rounded);
  }
  const auto entry = segments_.emplace(base, SegmentEntry{nullptr, size}).first;
  // From here on nothing allocates: the Blocks come from the spares, the split's remainder goes
  // into the room its bin made, the table has room for the block.
  Block* block = new_block();
  block->ptr = base;
  block->size = size;
  block->small = small;
  entry->second.head = block;
  reserved_bytes_ += size;
  return hand_out(block, rounded, Fit::kExact);
}

Block* BlockStore::hand_out(Block* block, size_t rounded, Fit fit) {
  const bool split = policy_.should_split(block->small, block->size, rounded, fit);
  if (split) {
    Block* rest = new_block();
    rest->ptr = block->ptr + rounded;
    rest->size = block->size - rounded;
    rest->small = block->small;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = rounded;
    insert_free(rest);
    // An unmerged block's free neighbour may be unmerged with it: the remainder keeps that duty.
    if (block->unmerged) defer_merge(rest);
  }
  settle(block, /*reused_whole=*/!split);
  block->state = BlockState::kAllocated;
  block->requested = rounded;
  block->tag = 0;  // it held the block's free slot
  if (!block->addressed) {
    by_address_.insert(block);
    block->addressed = true;
  }
  return block;
}

Block* BlockStore::find_allocated(CUdeviceptr ptr) const {
  Block* block = find(ptr);
  return block != nullptr && block->state == BlockState::kAllocated ? block : nullptr;
}

Block* BlockStore::find(CUdeviceptr ptr) const { return by_address_.find(ptr); }

bool BlockStore::holds(CUdeviceptr ptr) const { return segment_base(ptr) != 0; }

CUdeviceptr BlockStore::segment_base(CUdeviceptr ptr) const {
  auto it = segments_.upper_bound(ptr);
  if (it == segments_.begin()) return 0;
  --it;
  return ptr - it->first < it->second.size ? it->first : 0;
}

Block* BlockStore::retire(CUdeviceptr ptr) {
  Block* block = find_allocated(ptr);
  if (block != nullptr) block->state = BlockState::kPending;
  return block;
}

void BlockStore::make_free(Block* block) {
  if (!block->small) {
    merge_and_insert(block);
    return;
  }
  // A block without a free neighbour has nothing to merge with: it joins the bins as it is, off
  // the unmerged list (four freed blocks in five, with varied sizes), and its next hand-out tells
  // whether freed sizes come back all the same.
  const bool mergeable = has_free_neighbour(*block);
  if (mergeable && !deferral_pays()) {
    merge_and_insert(block);
    return;
  }
  insert_free(block);
  block->reuse_watched = true;
  if (mergeable) defer_merge(block);
}

bool BlockStore::deferral_pays() {
  // It pays while at least one freed block in four is reused whole. While it does not, one block
  // in eight is deferred all the same, so a return to repeating sizes is seen.
  if (freed_reused_whole_ * 3 >= freed_in_vain_) return true;
  return ++merged_at_once_ % 8 == 0;
}

void BlockStore::settle(Block* block, bool reused_whole) {
  if (block->reuse_watched) {
    block->reuse_watched = false;
    ++(reused_whole ? freed_reused_whole_ : freed_in_vain_);
    if (freed_reused_whole_ + freed_in_vain_ >= kDeferralWindow) {
      freed_reused_whole_ /= 2;
      freed_in_vain_ /= 2;
    }
  }
  if (block->unmerged) {
    block->unmerged = false;
    --unmerged_count_;
  }
}

void BlockStore::defer_merge(Block* block) {
  // Every entry is stale once every deferred block was handed out again (the steady reuse of one
  // size): drop them instead of letting them pile up to the next compaction.
  if (unmerged_count_ == 0) unmerged_.clear();
  block->unmerged = true;
  ++unmerged_count_;
  unmerged_.push_back(block);
  if (unmerged_.size() >= std::max(compact_unmerged_at_, kUnmergedCompactionFloor)) {
    compact_unmerged();
  }
}

void BlockStore::compact_unmerged() {
  // Keep each unmerged block once: clear its flag at its first entry, then set the kept flags
  // again.
  size_t kept = 0;
  for (Block* block : unmerged_) {
    if (!block->unmerged) continue;
    block->unmerged = false;
    unmerged_[kept++] = block;
  }
  unmerged_.resize(kept);
  for (Block* block : unmerged_) block->unmerged = true;
  compact_unmerged_at_ = 2 * kept;
}

void BlockStore::consolidate() {
  if (unmerged_count_ == 0) return;
  for (Block* block : unmerged_) {
    if (!block->unmerged) continue;  // handed out, or merged into a neighbour, since
    settle(block, /*reused_whole=*/false);
    erase_free(block);
    merge_and_insert(block);
  }
  unmerged_.clear();
  unmerged_count_ = 0;
  compact_unmerged_at_ = 0;
}

void BlockStore::merge_and_insert(Block* block) {
  // Merge into the free blocks before it, then absorb those after it: the whole free run becomes
  // one block (with deferred merging a run may be longer than three). The head of a segment never
  // disappears this way, so segments_ stays valid.
  while (Block* prev = block->prev) {
    if (prev->state != BlockState::kFree) break;
    erase_free(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (prev->next) prev->next->prev = prev;
    forget(block);
    block = prev;
  }
  while (Block* next = block->next) {
    if (next->state != BlockState::kFree) break;
    erase_free(next);
    block->size += next->size;
    block->next = next->next;
    if (block->next) block->next->prev = block;
    forget(next);
  }
  insert_free(block);
}

void BlockStore::make_all_free_pending(std::vector<Block*>* pending) {
  for (FreeBins* bins : {&small_free_, &large_free_}) {
    bins->for_each([pending](Block* block) {
      block->state = BlockState::kPending;
      block->unmerged = false;  // the list is dropped whole below
      block->reuse_watched = false;
      block->tag = 0;  // it held the block's free slot
      pending->push_back(block);
    });
    bins->clear();
  }
  unmerged_.clear();
  unmerged_count_ = 0;
  compact_unmerged_at_ = 0;
  free_bytes_ = 0;
  whole_free_segments_ = 0;
}

std::vector<Segment> BlockStore::detach_free_segments(size_t keep_free_bytes) {
  if (free_bytes_ <= keep_free_bytes) return {};
  consolidate();
  if (whole_free_segments_ == 0) return {};
  std::vector<Block*> candidates;
  for (FreeBins* bins : {&small_free_, &large_free_}) {
    bins->for_each([&candidates](Block* block) {
      if (block->is_whole_segment()) candidates.push_back(block);
    });
  }
  // Largest first; among equals, in address order, as the bins visit blocks in no order.
  std::sort(candidates.begin(), candidates.end(), [](const Block* a, const Block* b) {
    return a->size != b->size ? a->size > b->size : a->ptr < b->ptr;
  });
  std::vector<Segment> detached;
  for (Block* block : candidates) {
    if (free_bytes_ <= keep_free_bytes) break;
    erase_free(block);
    segments_.erase(block->ptr);
    reserved_bytes_ -= block->size;
    detached.push_back({block->ptr, block->size, block->small});
    forget(block);
  }
  return detached;
}

void BlockStore::add_free_segment(const Segment& segment) {
  // As add_segment_and_take: what needs host memory first, so that a throw changes nothing.
  if (spare_blocks_ == nullptr) add_block_chunk();
  free_bins(segment.small).make_room_for(segment.size);
  const auto entry = segments_.emplace(segment.ptr, SegmentEntry{nullptr, segment.size}).first;
  Block* block = new_block();
  block->ptr = segment.ptr;
  block->size = segment.size;
  block->small = segment.small;
  entry->second.head = block;
  reserved_bytes_ += segment.size;
  insert_free(block);
}

std::vector<Segment> BlockStore::detach_all(
    std::vector<std::pair<uint32_t, size_t>>* allocated_tags) {
  std::vector<Segment> unused;
  for (const auto& [base, segment] : segments_) {
    bool has_allocated = false;
    for (Block* block = segment.head; block != nullptr;) {
      Block* next = block->next;
      if (block->state == BlockState::kAllocated) {
        has_allocated = true;
        if (block->tag != 0) allocated_tags->emplace_back(block->tag, block->requested);
      }
      recycle(block);
      block = next;
    }
    if (!has_allocated) unused.push_back({base, segment.size});
  }
  // Nothing is left to keep track of: the bookkeeping's memory goes too (a pool dropped with its
  // context kept its free bins' classes, about 50 KB, for the rest of the run).
  segments_.clear();
  std::vector<Block*>().swap(unmerged_);
  unmerged_count_ = 0;
  compact_unmerged_at_ = 0;
  small_free_ = FreeBins();
  large_free_ = FreeBins();
  by_address_ = BlockAddressTable();
  spare_blocks_ = nullptr;
  spare_count_ = 0;
  std::vector<BlockChunk>().swap(block_chunks_);  // every Block was recycled above
  reserved_bytes_ = 0;
  free_bytes_ = 0;
  whole_free_segments_ = 0;
  return unused;
}

}  // namespace vramshim::pool
