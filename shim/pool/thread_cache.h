// One thread's share of one pool: what lets a thread allocate and free without the device lock
// (docs/design.md, "Thread caches").
#pragma once

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shim/pool/block.h"
#include "shim/pool/size_policy.h"
#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

class AllocationLedger;
class CachingPool;

// What one thread keeps of one pool, all of it small blocks (SizePolicy::is_small) held
// (BlockState::kHeld):
//  - ready blocks of a few sizes, each already fenced (reusable now);
//  - the blocks it handed out, with the site each was attributed to, so that their free finds them
//    without the pool's table, and with what the pool keeps in a Block while it is allocated
//    (requested, tag). Ready and handed-out blocks are kept with their address and size, so the
//    cache's own operations neither read nor write a Block: Blocks of different threads share
//    cache lines, which the pool writes under its lock;
//  - the blocks freed to it, pending until a fence issued after their free completes (a
//    legacy-stream marker of the thread's own, or the pool's fences);
//  - credit: bytes its frees took out of the pool's figures and not yet given back to them. An
//    allocation without the device lock spends credit and never more, so no figure of the pool or
//    of the device's limit is ever above what the device lock last saw, and every new peak is made
//    under that lock (CachingPool folds the credits back first).
//
// Locking: the owning thread takes lock() around each operation it makes without the device lock;
// any other thread touches a cache only while it holds the device lock, and takes lock() too
// (device lock first). The owning thread, while it holds the device lock, needs no lock(). Before
// it takes lock(), the owning thread may ask may_serve() and may_take_back(), which read without
// it: a "no" spares a call that cannot be served its lock, a "yes" is checked again under it.
// This class only keeps things; CachingPool decides what moves where.
class ThreadCache {
 public:
  static constexpr size_t kBins = 16;
  static constexpr size_t kBinDepth = 64;
  // A bin is filled to at most this many bytes, or one block of a larger size.
  static constexpr size_t kBinBytes = size_t{256} << 10;
  static constexpr size_t kLiveSlots = 1024;
  // Handed-out blocks pushed out of their slot by a newer one, kept until the next locked call.
  static constexpr size_t kEvicted = 64;
  // More than a bin holds: a thread that empties a bin has freed what it took back from it.
  static constexpr size_t kPendingBlocks = 2 * kBinDepth;
  static constexpr size_t kPendingBytes = size_t{8} << 20;

  struct Ready {
    Block* block = nullptr;
    CUdeviceptr ptr = 0;
  };
  // A block the cache handed out (its requested size is its size), the attribution's request it
  // was tagged for (0: untagged) and its tag.
  struct Handed {
    CUdeviceptr ptr = 0;
    Block* block = nullptr;
    uint64_t request = 0;
    uint32_t tag = 0;
    uint32_t size = 0;
  };

  explicit ThreadCache(uint16_t number) : number_(number) {}
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  support::AdaptiveMutex& lock() { return lock_; }
  // Its number in its DeviceCaches, kept in the blocks it holds (Block::holder).
  uint16_t number() const { return number_; }
  // Who has it: set by DeviceCaches (device lock). `ledger`: the attribution's credits of this
  // cache (AllocationTagger), null when the pool's allocations are not attributed.
  CachingPool* pool() const { return pool_; }
  AllocationLedger* ledger() const { return ledger_; }
  void assign(CachingPool* pool, AllocationLedger* ledger) {
    pool_ = pool;
    ledger_ = ledger;
  }

  // Ready blocks. `peek_ready` and `take_ready` look only at `rounded`'s bin, whose blocks are all
  // exactly that size. A bin serves one size: the size it is claimed for, which a locked
  // allocation claims once it finds the bin empty, and serves through the cache from its second
  // request on (sizes that never come back never fill a bin). A bin keeps one block at first, and
  // twice as many each time the locked path finds it empty (found_empty), up to kBinBytes or
  // kBinDepth blocks: sizes used a few at a time keep few.
  bool bin_is_for(size_t rounded) const;
  void claim_bin(size_t rounded);
  void found_empty(size_t rounded);
  // Without lock(), by the owning thread only: false when no ready block of `rounded` is there, and
  // when no block it handed out starts at `ptr`.
  bool may_serve(size_t rounded) const;
  bool may_take_back(CUdeviceptr ptr) const;
  const Ready* peek_ready(size_t rounded) const;
  Block* take_ready(size_t rounded);
  // How many more ready blocks of `rounded` bytes the cache would keep now (its bin's target less
  // what it holds; 0 while the bin holds blocks of another size, 1 when it is empty and claimed for
  // another size), and whether the bin is low enough to be worth refilling.
  size_t ready_room(size_t rounded) const;
  bool wants_refill(size_t rounded) const;
  void keep_ready(Block* block);  // requires ready_room(block->size) > 0
  void keep_ready(const Ready& ready, size_t size);
  // Hands every ready block to `give(Block*)` and forgets them.
  template <typename Give>
  void give_up_ready(Give&& give);
  uint64_t ready_bytes() const { return ready_bytes_; }

  // Handed-out blocks, by address in a table of kLiveSlots slots, one block a slot; a block pushed
  // out of its slot by a newer one is evicted: kept aside (at most kEvicted) until the pool takes
  // it back as its own allocated block (give_up_handed), and no longer found by find_handed.
  // Null when no block handed out by this cache, not evicted, starts at `ptr`.
  const Handed* find_handed(CUdeviceptr ptr) const;
  // Whether remember_handed would keep a block at `ptr`: its slot is free, or its block can be
  // evicted.
  bool can_remember(CUdeviceptr ptr) const;
  // Requires can_remember(ready.ptr).
  void remember_handed(const Ready& ready, size_t size, uint64_t request, uint32_t tag);
  void forget_handed(CUdeviceptr ptr);  // requires find_handed(ptr)
  // The block handed out at `ptr`, evicted or not, forgotten; false when there is none.
  bool take_handed(CUdeviceptr ptr, Handed* handed);
  template <typename Give>
  void give_up_handed(Give&& give);  // give(const Handed&) for each, evicted too; forgets them
  template <typename Give>
  void give_up_evicted(Give&& give);

  // Blocks freed to the cache, waiting for the pool to fence them.
  bool pending_room(size_t block_size) const {
    return pending_count_ < kPendingBlocks && pending_bytes_ + block_size <= kPendingBytes;
  }
  void keep_pending(const Ready& freed, size_t size);  // requires pending_room(size)
  template <typename Give>
  void give_up_pending(Give&& give);
  size_t pending_count() const { return pending_count_; }
  uint64_t pending_bytes() const { return pending_bytes_; }
  // A fence issued after every free it holds has completed: its freed blocks become ready while
  // their bins have room; give(Block*) the others.
  template <typename Give>
  void ready_pending(Give&& give);

  // Whether the attribution must order the next attributed allocation served without the device
  // lock among all threads' (LastUse in allocation_tagger.h): the blocks a ready bin holds were
  // freed by the owning thread, except those a locked call of it brought in from the pool (a
  // hand-out through the cache, a refill, a free of a block the pool or another cache handed out),
  // last used by any thread; once one allocation is so ordered, all of them were used before it.
  // The owning thread's alone.
  bool next_use_ordered() const { return next_use_ordered_; }
  void locked_call() { next_use_ordered_ = true; }
  void use_ordered() { next_use_ordered_ = false; }

  // Credit and the counts its operations owe the pool's figures (see the class comment).
  uint64_t credit() const { return credit_; }
  void spend(uint64_t bytes) {
    credit_ -= bytes;
    owes_.store(true, std::memory_order_relaxed);
  }
  void earn(uint64_t bytes) {
    credit_ += bytes;
    owes_.store(true, std::memory_order_relaxed);
  }
  void count_hit() { ++hits_; }  // an allocation served without the device lock; spends credit
  // Whether it may owe anything, without lock(): a fold skips a cache that owes nothing (one whose
  // owner is changing that right now is folded before or after, as if it had come a moment later).
  bool owes() const { return owes_.load(std::memory_order_relaxed); }
  // What the pool folds into its figures: the credit and the allocations served (pool hits); both
  // are zero afterwards.
  struct Owed {
    uint64_t credit;
    uint64_t hits;
  };
  Owed take_owed() {
    const Owed owed{credit_, hits_};
    credit_ = 0;
    hits_ = 0;
    owes_.store(false, std::memory_order_relaxed);
    return owed;
  }

 private:
  // Sizes, counts and slot addresses are atomics, read by may_serve() and may_take_back() without
  // the lock (relaxed: plain loads and stores on x86).
  struct Bin {
    std::atomic<size_t> size{0};
    std::atomic<size_t> count{0};
    size_t target = 1;  // the blocks it keeps at most, for now; changed under the device lock
    Ready blocks[kBinDepth];
  };
  static size_t bin_index(size_t rounded);
  static size_t slot_index(CUdeviceptr ptr);
  static size_t depth_for(size_t rounded);

  support::AdaptiveMutex lock_;
  const uint16_t number_;
  CachingPool* pool_ = nullptr;
  AllocationLedger* ledger_ = nullptr;

  Bin bins_[kBins];
  uint64_t ready_bytes_ = 0;
  Handed handed_[kLiveSlots];
  std::atomic<CUdeviceptr> slot_ptr_[kLiveSlots] = {};  // handed_[i].ptr, 0 for an empty slot
  Handed evicted_[kEvicted];
  size_t evicted_count_ = 0;
  struct Pending {
    Ready freed;
    size_t size;
  };
  Pending pending_[kPendingBlocks] = {};
  size_t pending_count_ = 0;
  uint64_t pending_bytes_ = 0;
  bool next_use_ordered_ = false;
  uint64_t credit_ = 0;
  uint64_t hits_ = 0;
  std::atomic<bool> owes_{false};
};

template <typename Give>
void ThreadCache::give_up_ready(Give&& give) {
  for (Bin& bin : bins_) {
    const size_t count = bin.count.load(std::memory_order_relaxed);
    for (size_t i = 0; i < count; ++i) give(bin.blocks[i].block);
    bin.count.store(0, std::memory_order_relaxed);
  }
  ready_bytes_ = 0;
}

template <typename Give>
void ThreadCache::give_up_handed(Give&& give) {
  for (size_t i = 0; i < kLiveSlots; ++i) {
    if (handed_[i].block == nullptr) continue;
    give(static_cast<const Handed&>(handed_[i]));
    handed_[i] = Handed{};
    slot_ptr_[i].store(0, std::memory_order_relaxed);
  }
  give_up_evicted(give);
}

template <typename Give>
void ThreadCache::give_up_evicted(Give&& give) {
  for (size_t i = 0; i < evicted_count_; ++i) give(static_cast<const Handed&>(evicted_[i]));
  evicted_count_ = 0;
}

template <typename Give>
void ThreadCache::give_up_pending(Give&& give) {
  for (size_t i = 0; i < pending_count_; ++i) give(pending_[i].freed.block);
  pending_count_ = 0;
  pending_bytes_ = 0;
}

template <typename Give>
void ThreadCache::ready_pending(Give&& give) {
  for (size_t i = 0; i < pending_count_; ++i) {
    const Pending& pending = pending_[i];
    if (ready_room(pending.size) > 0) {
      keep_ready(pending.freed, pending.size);
    } else {
      give(pending.freed.block);
    }
  }
  pending_count_ = 0;
  pending_bytes_ = 0;
}

inline size_t ThreadCache::bin_index(size_t rounded) {
  return (rounded / SizePolicy::kGranularity) % kBins;
}

inline size_t ThreadCache::slot_index(CUdeviceptr ptr) {
  // Fibonacci hashing of the 512-byte unit: neighbouring blocks land far apart.
  constexpr int kSlotBits = __builtin_ctzll(kLiveSlots);
  static_assert((size_t{1} << kSlotBits) == kLiveSlots, "a power of two");
  return static_cast<size_t>(((ptr / SizePolicy::kGranularity) * 0x9e3779b97f4a7c15ULL) >>
                             (64 - kSlotBits));
}

inline size_t ThreadCache::depth_for(size_t rounded) {
  return std::clamp<size_t>(kBinBytes / rounded, 1, kBinDepth);
}

inline bool ThreadCache::bin_is_for(size_t rounded) const {
  return bins_[bin_index(rounded)].size.load(std::memory_order_relaxed) == rounded;
}

inline void ThreadCache::claim_bin(size_t rounded) {
  Bin& bin = bins_[bin_index(rounded)];
  if (bin.count.load(std::memory_order_relaxed) == 0 &&
      bin.size.load(std::memory_order_relaxed) != rounded) {
    bin.size.store(rounded, std::memory_order_relaxed);
    bin.target = 1;
  }
}

inline void ThreadCache::found_empty(size_t rounded) {
  Bin& bin = bins_[bin_index(rounded)];
  bin.target = std::min(2 * bin.target, depth_for(rounded));
}

inline bool ThreadCache::may_serve(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  return bin.size.load(std::memory_order_relaxed) == rounded &&
         bin.count.load(std::memory_order_relaxed) > 0;
}

inline bool ThreadCache::may_take_back(CUdeviceptr ptr) const {
  return slot_ptr_[slot_index(ptr)].load(std::memory_order_relaxed) == ptr;
}

inline const ThreadCache::Ready* ThreadCache::peek_ready(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  return count > 0 && bin.size.load(std::memory_order_relaxed) == rounded ? &bin.blocks[count - 1]
                                                                          : nullptr;
}

inline Block* ThreadCache::take_ready(size_t rounded) {
  Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  if (count == 0 || bin.size.load(std::memory_order_relaxed) != rounded) return nullptr;
  ready_bytes_ -= rounded;
  bin.count.store(count - 1, std::memory_order_relaxed);
  return bin.blocks[count - 1].block;
}

inline size_t ThreadCache::ready_room(size_t rounded) const {
  const Bin& bin = bins_[bin_index(rounded)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  if (bin.size.load(std::memory_order_relaxed) != rounded) return count == 0 ? 1 : 0;
  return bin.target - std::min(count, bin.target);
}

inline bool ThreadCache::wants_refill(size_t rounded) const {
  // Below half: refilling one block at a time would take the store's lines on every locked call.
  return ready_room(rounded) * 2 > bins_[bin_index(rounded)].target;
}

inline void ThreadCache::keep_ready(Block* block) { keep_ready({block, block->ptr}, block->size); }

inline void ThreadCache::keep_ready(const Ready& ready, size_t size) {
  Bin& bin = bins_[bin_index(size)];
  const size_t count = bin.count.load(std::memory_order_relaxed);
  if (bin.size.load(std::memory_order_relaxed) != size) {
    bin.size.store(size, std::memory_order_relaxed);
    bin.target = 1;
  }
  bin.blocks[count] = ready;
  bin.count.store(count + 1, std::memory_order_relaxed);
  ready_bytes_ += size;
}

inline const ThreadCache::Handed* ThreadCache::find_handed(CUdeviceptr ptr) const {
  const Handed& handed = handed_[slot_index(ptr)];
  return handed.block != nullptr && handed.ptr == ptr ? &handed : nullptr;
}

inline bool ThreadCache::can_remember(CUdeviceptr ptr) const {
  return handed_[slot_index(ptr)].block == nullptr || evicted_count_ < kEvicted;
}

inline void ThreadCache::remember_handed(const Ready& ready, size_t size, uint64_t request,
                                         uint32_t tag) {
  const size_t index = slot_index(ready.ptr);
  Handed& slot = handed_[index];
  if (slot.block != nullptr) evicted_[evicted_count_++] = slot;
  slot = {ready.ptr, ready.block, request, tag, static_cast<uint32_t>(size)};
  slot_ptr_[index].store(ready.ptr, std::memory_order_relaxed);
}

inline void ThreadCache::forget_handed(CUdeviceptr ptr) {
  const size_t index = slot_index(ptr);
  handed_[index] = Handed{};
  slot_ptr_[index].store(0, std::memory_order_relaxed);
}

inline bool ThreadCache::take_handed(CUdeviceptr ptr, Handed* handed) {
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

inline void ThreadCache::keep_pending(const Ready& freed, size_t size) {
  pending_[pending_count_++] = {freed, size};
  pending_bytes_ += size;
}

}  // namespace vramshim::pool
