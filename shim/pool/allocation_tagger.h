// What a pool keeps for the attribution with each allocation it hands out: a tag that the
// attribution gives when the allocation is made and takes back when it is freed. Both calls are
// made under the pool's lock, so the attribution's figures change in the order in which the pool
// hands memory out and takes it back, and a free finds the tag with the pool's one lookup of the
// block.
#pragma once

#include <cstdint>

namespace vramshim::pool {

class AllocationTagger {
 public:
  virtual ~AllocationTagger() = default;
  // `request`: what the caller prepared for this allocation before calling the pool (0: nothing to
  // attribute); `size`: the bytes handed out at `ptr`. Returns the tag to keep, 0 for none. Must
  // not block or call the pool.
  virtual uint32_t tag(uint64_t request, uint64_t size, uint64_t ptr) noexcept = 0;
  // The allocation of `tag` (nonzero) and `size` at `ptr` was freed; `ptr` 0: forgotten with its
  // context.
  virtual void untag(uint32_t tag, uint64_t size, uint64_t ptr) noexcept = 0;
};

}  // namespace vramshim::pool
