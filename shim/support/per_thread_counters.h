// Counters that many threads bump without sharing a cache line: each thread adds to a block of its
// own and a read sums the blocks. A thread that exits leaves its block (and its counts) to the next
// new thread, so memory stays bounded by the most threads alive at once.
//
// The user defines one PerThreadCounters object and one `thread_local ...::Slot` at namespace scope
// in a .cc file (a function-local or templated static would be a vague-linkage symbol that the
// preloaded library would list among its dynamic symbols).
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace vramshim::support {

template <size_t kCounters>
class PerThreadCounters {
  struct Block;

 public:
  // A thread's claim on a block. A plain pointer: a thread-local with a destructor is checked for
  // its first use at every access (a guard and a call, about 10 ns a pair of hooks); the block is
  // given back at thread exit through a thread-specific key instead.
  class Slot {
   private:
    friend class PerThreadCounters;
    Block* block_ = nullptr;
  };
  static_assert(std::is_trivially_destructible_v<Slot>);

  // Constant-initialized: a hook may count before the library's constructors have run.
  constexpr PerThreadCounters() = default;

  void add(Slot& slot, size_t counter) {
    if (__builtin_expect(slot.block_ == nullptr, 0) && !claim(slot)) return;
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

  // The blocks made so far: at most the most threads that have counted at once.
  size_t block_count() const {
    size_t count = 0;
    for (const Block* block = head_.load(std::memory_order_acquire); block != nullptr;
         block = block->next) {
      ++count;
    }
    return count;
  }

 private:
  struct alignas(64) Block {
    std::atomic<uint64_t> counts[kCounters] = {};
    std::atomic<bool> owned{true};
    Block* next = nullptr;
  };

  // False when out of host memory: the count is dropped. Out of line, so that a count saves no
  // registers for it.
  [[gnu::noinline, gnu::cold]] bool claim(Slot& slot) {
    slot.block_ = claim_block();
    if (slot.block_ == nullptr) return false;
    // The key's value is the thread's slot, which lives until after the key's destructors ran.
    // Without a key (none left in the process) the block stays the exited thread's.
    if (key_made()) pthread_setspecific(key_, &slot);
    return true;
  }

  // How long a claim waits for another thread making the key.
  static constexpr int kMaxKeyWaitYields = 100000;

  // Made by the first claim (a constructor could run after a hook's first count).
  bool key_made() {
    int state = key_state_.load(std::memory_order_acquire);
    if (state == kKeyUnmade &&
        key_state_.compare_exchange_strong(state, kKeyMaking, std::memory_order_acquire)) {
      state = pthread_key_create(&key_, &give_back) == 0 ? kKeyMade : kKeyNone;
      key_state_.store(state, std::memory_order_release);
    }
    // Another thread makes it (a few microseconds). In a child forked meanwhile no thread ever
    // will: the wait is bounded, and the count goes on without the key (the block is not given
    // back at the thread's exit).
    for (int yields = 0; state == kKeyMaking; ++yields) {
      if (yields == kMaxKeyWaitYields) return false;
      sched_yield();
      state = key_state_.load(std::memory_order_acquire);
    }
    return state == kKeyMade;
  }

  // At thread exit. A hook called by a later thread-exit destructor finds the slot empty and claims
  // again, which sets the key again, and the key's destructor runs once more.
  static void give_back(void* value) {
    Slot& slot = *static_cast<Slot*>(value);
    if (slot.block_ == nullptr) return;
    slot.block_->owned.store(false, std::memory_order_release);
    slot.block_ = nullptr;
  }

  // A block left by an exited thread, or a new one (null when out of memory); never freed (readers
  // may be walking it).
  Block* claim_block() {
    for (Block* block = head_.load(std::memory_order_acquire); block != nullptr;
         block = block->next) {
      bool expected = false;
      if (block->owned.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        return block;
      }
    }
    auto* block = new (std::nothrow) Block;
    if (block == nullptr) return nullptr;
    block->next = head_.load(std::memory_order_relaxed);
    while (!head_.compare_exchange_weak(block->next, block, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
    return block;
  }

  std::atomic<Block*> head_{nullptr};
  enum : int { kKeyUnmade, kKeyMaking, kKeyMade, kKeyNone };
  std::atomic<int> key_state_{kKeyUnmade};
  pthread_key_t key_{};
};

}  // namespace vramshim::support
