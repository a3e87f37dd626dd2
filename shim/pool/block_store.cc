#include "shim/pool/block_store.h"

#include <algorithm>

namespace vramshim::pool {

BlockStore::BlockStore(SizePolicy policy) : policy_(policy) {}

namespace {

constexpr size_t kBlocksPerChunk = 256;

}  // namespace

BlockStore::~BlockStore() = default;

Block* BlockStore::new_block() {
  if (spare_blocks_.empty()) {
    block_chunks_.push_back(std::make_unique<Block[]>(kBlocksPerChunk));
    Block* chunk = block_chunks_.back().get();
    for (size_t i = kBlocksPerChunk; i > 0; --i) spare_blocks_.push_back(&chunk[i - 1]);
  }
  Block* block = spare_blocks_.back();
  spare_blocks_.pop_back();
  *block = Block{};
  return block;
}

void BlockStore::recycle(Block* block) { spare_blocks_.push_back(block); }

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

Block* BlockStore::take(size_t rounded) {
  Block* block = free_bins(policy_.is_small(rounded)).best_fit(rounded);
  if (block == nullptr || !policy_.can_serve(block->size, rounded)) return nullptr;
  erase_free(block);
  return hand_out(block, rounded);
}

Block* BlockStore::take_exact(size_t rounded) {
  Block* block = free_bins(policy_.is_small(rounded)).best_fit(rounded);
  if (block == nullptr || block->size != rounded) return nullptr;
  erase_free(block);
  return hand_out(block, rounded);
}

Block* BlockStore::add_segment_and_take(CUdeviceptr base, size_t size, size_t rounded) {
  Block* block = new_block();
  block->ptr = base;
  block->size = size;
  block->small = policy_.is_small(rounded);
  segments_[base] = {block, size};
  reserved_bytes_ += size;
  return hand_out(block, rounded);
}

Block* BlockStore::hand_out(Block* block, size_t rounded) {
  if (policy_.should_split(block->small, block->size, rounded)) {
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
  }
  block->state = BlockState::kAllocated;
  block->requested = rounded;
  block->tag = 0;  // it held the block's free slot
  if (!block->addressed) {
    by_address_.insert({block->ptr, block});
    block->addressed = true;
  }
  return block;
}

Block* BlockStore::find_allocated(CUdeviceptr ptr) const {
  const AddressEntry* entry = by_address_.find(ptr);
  if (entry == nullptr || entry->block->state != BlockState::kAllocated) return nullptr;
  return entry->block;
}

bool BlockStore::holds(CUdeviceptr ptr) const {
  auto it = segments_.upper_bound(ptr);
  if (it == segments_.begin()) return false;
  --it;
  return ptr - it->first < it->second.size;
}

Block* BlockStore::retire(CUdeviceptr ptr) {
  Block* block = find_allocated(ptr);
  if (block != nullptr) block->state = BlockState::kPending;
  return block;
}

void BlockStore::make_free(Block* block) {
  // Merge into the previous free neighbour, then absorb the next one. The head of a segment never
  // disappears this way, so segments_ stays valid.
  if (Block* prev = block->prev; prev && prev->state == BlockState::kFree) {
    erase_free(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (prev->next) prev->next->prev = prev;
    forget(block);
    block = prev;
  }
  if (Block* next = block->next; next && next->state == BlockState::kFree) {
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
      block->tag = 0;  // it held the block's free slot
      pending->push_back(block);
    });
    bins->clear();
  }
  free_bytes_ = 0;
  whole_free_segments_ = 0;
}

std::vector<Segment> BlockStore::detach_free_segments(size_t keep_free_bytes) {
  if (whole_free_segments_ == 0 || free_bytes_ <= keep_free_bytes) return {};
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
    detached.push_back({block->ptr, block->size});
    forget(block);
  }
  return detached;
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
  segments_.clear();
  small_free_.clear();
  large_free_.clear();
  by_address_.clear();
  reserved_bytes_ = 0;
  free_bytes_ = 0;
  whole_free_segments_ = 0;
  return unused;
}

}  // namespace vramshim::pool
