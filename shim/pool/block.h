// A block: a piece of one driver allocation (a segment) that the pool hands out, keeps free, or
// holds pending until its fence completes.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace vramshim::pool {

enum class BlockState : uint8_t {
  kFree,       // in the free bins, may be handed out
  kAllocated,  // handed out to the program
  kPending,    // freed by the program, waiting for a fence before it may be handed out again
  // In a thread cache's keeping (ThreadCache, `holder`): ready to hand out, handed out by it, or
  // freed to it and pending. Which of these is the cache's to know, under its own lock.
  kHeld,
};

// A contiguous piece of one driver allocation (segment). The blocks of a segment form a list in
// address order; the first block of a segment starts at the driver's pointer.
// 16-byte aligned: BlockAddressTable keeps a Block's address without its low 4 bits.
struct alignas(16) Block {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  size_t requested = 0;  // the rounded request while allocated
  Block* prev = nullptr;
  Block* next = nullptr;
  union {
    uint32_t tag = 0;    // while allocated: the attribution's tag (AllocationTagger), 0 for none
    uint32_t free_slot;  // while free: its place in its size class (FreeBins), for a quick erase
  };
  // The store's marks and the pool's, one byte between them (Block{} clears them):
  bool small : 1;
  // In the store's table by address: from its first hand-out until it is merged away or its
  // segment detached, pending and free in between.
  bool addressed : 1;
  // Free and not yet merged with its free neighbours (BlockStore defers merging small blocks).
  bool unmerged : 1;
  // Free at the size it was freed with, its next hand-out counted in whether freed sizes come back
  // (BlockStore::deferral_pays).
  bool reuse_watched : 1;
  // The last allocation or free at its address the attribution was told of was told under the
  // pool's lock (AllocationTagger::tag or untag), so the next one told there may say
  // LastUse::kThisLock. Cleared as a thread cache takes the block into its keeping.
  bool last_use_locked : 1;
  BlockState state = BlockState::kFree;
  // While held: the holding thread cache's number in its DeviceCaches (never 0).
  uint16_t holder = 0;

  bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

// One Block per live allocation, of the 96 B of host memory an allocation may cost in all.
static_assert(sizeof(Block) <= 48, "a Block per live allocation: keep it small");

// A driver allocation, as handed back to the driver.
struct Segment {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  bool small = false;  // its blocks serve small requests (SizePolicy::is_small)
};

}  // namespace vramshim::pool
