// A block: a piece of one driver allocation (a segment) that the pool hands out, keeps free, or
// holds pending until its fence completes.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace vramshim::pool {

enum class BlockState : uint8_t {
  kFree,       // in a free set, may be handed out
  kAllocated,  // handed out to the program
  kPending,    // freed by the program, waiting for a fence before it may be handed out again
};

// A contiguous piece of one driver allocation (segment). The blocks of a segment form a list in
// address order; the first block of a segment starts at the driver's pointer.
struct Block {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  size_t requested = 0;  // the rounded request while allocated
  Block* prev = nullptr;
  Block* next = nullptr;
  uint32_t tag = 0;  // while allocated: the attribution's tag (AllocationTagger), 0 for none
  bool small = false;
  BlockState state = BlockState::kFree;

  bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

// Free sets are ordered by size, then address: lower_bound on a size gives the best fit.
struct BlockBySizeThenAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

// A driver allocation, as handed back to the driver.
struct Segment {
  CUdeviceptr ptr = 0;
  size_t size = 0;
};

}  // namespace vramshim::pool
