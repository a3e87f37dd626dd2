// What a pool keeps for the attribution with each allocation it hands out: a tag that the
// attribution gives when the allocation is made and takes back when it is freed. Both calls are
// made under the pool's lock, so the attribution's figures change in the order in which the pool
// hands memory out and takes it back, and a free finds the tag with the pool's one lookup of the
// block.
#pragma once

#include <cstdint>

#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

class AllocationTagger {
 public:
  virtual ~AllocationTagger() = default;
  // The lock that guards the figures tag() and untag() change for `device`: the pool of a context
  // on that device takes it as its own lock (shared with the pools of the device's other
  // contexts), so a pool's call and the figures it changes take one lock between them.
  virtual support::AdaptiveMutex& figures_lock(int device) noexcept = 0;
  // `request`: what the caller prepared for this allocation before calling the pool (0: nothing to
  // attribute); `size`: the bytes handed out at `ptr` on `device`. Returns the tag to keep, 0 for
  // none. Called with figures_lock(device) held; must not block or call the pool.
  virtual uint32_t tag(int device, uint64_t request, uint64_t size, uint64_t ptr) noexcept = 0;
  // The allocation of `tag` (nonzero) and `size` at `ptr` on `device` was freed; `ptr` 0: forgotten
  // with its context. Called with figures_lock(device) held.
  virtual void untag(int device, uint32_t tag, uint64_t size, uint64_t ptr) noexcept = 0;
};

}  // namespace vramshim::pool
