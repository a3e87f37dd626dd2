// Counters that many threads bump without sharing a cache line: each thread adds to a block of its
// own and a read sums the blocks. A thread that exits leaves its block (and its counts) to the next
// new thread, so memory stays bounded by the most threads alive at once.
//
// The user defines one PerThreadCounters object and one `thread_local ...::Slot` at namespace scope
// in a .cc file (a function-local or templated static would be a vague-linkage symbol that the
// preloaded library would list among its dynamic symbols).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace vramshim::support {

template <size_t kCounters>
class PerThreadCounters {
  struct Block;

 public:
  // A thread's claim on a block; gives it back when the thread exits.
  class Slot {
   public:
    ~Slot() {
      if (block_ != nullptr) block_->owned.store(false, std::memory_order_release);
      block_ = nullptr;  // a hook called by a later thread-exit destructor claims another block
    }

   private:
    friend class PerThreadCounters;
    Block* block_ = nullptr;
  };

  void add(Slot& slot, size_t counter) {
    if (__builtin_expect(slot.block_ == nullptr, 0)) slot.block_ = claim_block();
    std::atomic<uint64_t>& count = slot.block_->counts[counter];
    // Only this thread writes its block: a load and a store, no read-modify-write.
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  uint64_t sum(size_t counter) const {
    uint64_t total = 0;
    for (const Block* block = head_.load(std::memory_order_acquire); block != nullptr;
         block = block->next) {
      total += block->counts[counter].load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  struct alignas(64) Block {
    std::atomic<uint64_t> counts[kCounters] = {};
    std::atomic<bool> owned{true};
    Block* next = nullptr;
  };

  // A block left by an exited thread, or a new one; never freed (readers may be walking it).
  Block* claim_block() {
    for (Block* block = head_.load(std::memory_order_acquire); block != nullptr;
         block = block->next) {
      bool expected = false;
      if (block->owned.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        return block;
      }
    }
    auto* block = new Block;
    block->next = head_.load(std::memory_order_relaxed);
    while (!head_.compare_exchange_weak(block->next, block, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
    return block;
  }

  std::atomic<Block*> head_{nullptr};
};

}  // namespace vramshim::support
