#include "shim/pool/thread_cache.h"

#include <algorithm>

#include "shim/pool/size_policy.h"

namespace vramshim::pool {

size_t ThreadCache::bin_index(size_t rounded) {
  return (rounded / SizePolicy::kGranularity) % kBins;
}

size_t ThreadCache::slot_index(CUdeviceptr ptr) {
  // Fibonacci hashing of the 512-byte unit: neighbouring blocks land far apart.
  constexpr int kSlotBits = __builtin_ctzll(kLiveSlots);
  static_assert((size_t{1} << kSlotBits) == kLiveSlots, "a power of two");
  return static_cast<size_t>(((ptr / SizePolicy::kGranularity) * 0x9e3779b97f4a7c15ULL) >>
                             (64 - kSlotBits));
}

size_t ThreadCache::depth_for(size_t rounded) {
  return std::clamp<size_t>(kBinBytes / rounded, 1, kBinDepth);
}

bool ThreadCache::bin_is_for(size_t rounded) const {
  return bins_[bin_index(rounded)].size.load(std::memory_order_relaxed) == rounded;
}

void ThreadCache::claim_bin(size_t rounded) {
  Bin& bin = bins_[bin_index(rounded)];
  if (bin.count.load(std::memory_order_relaxed) == 0) {
    bin.size.store(rounded, std::memory_order_relaxed);
  }
}

bool ThreadCache::may_serve(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  return bin.size.load(std::memory_order_relaxed) == rounded &&
         bin.count.load(std::memory_order_relaxed) > 0;
}

bool ThreadCache::may_take_back(CUdeviceptr ptr) const {
  return slot_ptr_[slot_index(ptr)].load(std::memory_order_relaxed) == ptr;
}

const ThreadCache::Ready* ThreadCache::peek_ready(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  return count > 0 && bin.size.load(std::memory_order_relaxed) == rounded ? &bin.blocks[count - 1]
                                                                          : nullptr;
}

Block* ThreadCache::take_ready(size_t rounded) {
  Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  if (count == 0 || bin.size.load(std::memory_order_relaxed) != rounded) return nullptr;
  ready_bytes_ -= rounded;
  bin.count.store(count - 1, std::memory_order_relaxed);
  return bin.blocks[count - 1].block;
}

size_t ThreadCache::ready_room(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  if (count == 0) return depth_for(rounded);
  if (bin.size.load(std::memory_order_relaxed) != rounded) return 0;
  return depth_for(rounded) - std::min(count, depth_for(rounded));
}

bool ThreadCache::wants_refill(size_t rounded) const {
  // Below half: refilling one block at a time would take the store's lines on every locked call.
  return ready_room(rounded) * 2 > depth_for(rounded);
}

void ThreadCache::keep_ready(Block* block) {
  Bin& bin = bins_[bin_index(block->size)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  bin.size.store(block->size, std::memory_order_relaxed);
  bin.blocks[count] = {block, block->ptr};
  bin.count.store(count + 1, std::memory_order_relaxed);
  ready_bytes_ += block->size;
}

const ThreadCache::Handed* ThreadCache::find_handed(CUdeviceptr ptr) const {
  const Handed& handed = handed_[slot_index(ptr)];
  return handed.block != nullptr && handed.ptr == ptr ? &handed : nullptr;
}

bool ThreadCache::can_remember(CUdeviceptr ptr) const {
  return handed_[slot_index(ptr)].block == nullptr || evicted_count_ < kEvicted;
}

void ThreadCache::remember_handed(const Ready& ready, size_t size, uint64_t request, uint32_t tag) {
  const size_t index = slot_index(ready.ptr);
  Handed& slot = handed_[index];
  if (slot.block != nullptr) evicted_[evicted_count_++] = slot;
  slot = {ready.ptr, ready.block, request, tag, static_cast<uint32_t>(size)};
  slot_ptr_[index].store(ready.ptr, std::memory_order_relaxed);
}

void ThreadCache::forget_handed(CUdeviceptr ptr) {
  const size_t index = slot_index(ptr);
  handed_[index] = Handed{};
  slot_ptr_[index].store(0, std::memory_order_relaxed);
}

bool ThreadCache::take_handed(CUdeviceptr ptr, Handed* handed) {
  if (const Handed* found = find_handed(ptr)) {
    *handed = *found;
    forget_handed(ptr);
    return true;
  }
  for (size_t i = 0; i < evicted_count_; ++i) {
    if (evicted_[i].ptr != ptr) continue;
    *handed = evicted_[i];
    evicted_[i] = evicted_[--evicted_count_];
    return true;
  }
  return false;
}

void ThreadCache::keep_pending(Block* block, size_t size) {
  pending_[pending_count_++] = block;
  pending_bytes_ += size;
}

}  // namespace vramshim::pool
