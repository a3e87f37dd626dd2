// Interns stacks of return addresses into dense stack ids, and return addresses into dense frame
// ids: one per address and load of the module mapping it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "shim/attribution/append_only_array.h"
#include "shim/attribution/chunk_arena.h"
#include "shim/attribution/module_history.h"
#include "shim/attribution/stack_table_budget.h"

namespace vramshim::attribution {

// A known stack is found without a lock: a hash probe, then one comparison of its return addresses,
// which each stack keeps contiguous beside its frame ids; only a stack seen for the first time
// takes the table's mutex. Ids are never reused and entries never move, so a reader may walk ids
// below stack_count() / frame_count() while other threads intern.
//
// The stacks, their frames and the loads those name take at most a budget of host memory
// (VRAMSHIM_STACK_TABLE): past it, a new stack gets the overflow stack, one frame at
// kOverflowAddress, so that its allocations are still counted; known stacks are still found.
class StackTable {
 public:
  struct Frames {
    const uint32_t* frame_ids;  // innermost first
    uint32_t depth;
  };
  // The modules frames name, as they are when the report asks.
  struct Modules {
    std::vector<report::LoadedModule> loads;  // frame_module() indexes it
    std::vector<bool> loaded;                 // whether each load is still mapped
    size_t frame_count;                       // frames interned so far, all of whose loads it has
  };

  // The overflow stack's one frame: neither a user-space address nor a Python frame.
  static constexpr uint64_t kOverflowAddress = uint64_t{1} << 62;
  // The outermost frame of a stack that had more frames than VRAMSHIM_STACK_DEPTH keeps (the
  // tracker appends it), so that every view says where a stack was cut; and its name.
  static constexpr uint64_t kCutAddress = kOverflowAddress + 1;
  static constexpr const char* kCutName = "frames past VRAMSHIM_STACK_DEPTH";

  explicit StackTable(size_t budget_bytes = kDefaultStackTableBytes);
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // The id of the stack `frames[0..depth)` (innermost first), interning it if it is new; the
  // overflow stack's for a new stack once the budget is reached (one warning line the first time).
  uint32_t intern(const uint64_t* frames, int depth);

  size_t budget_bytes() const { return budget_bytes_; }
  // How many interns got the overflow stack: the allocations whose stack was not kept.
  uint64_t past_budget_count() const { return past_budget_count_.load(std::memory_order_relaxed); }

  size_t stack_count() const { return stacks_.size(); }
  size_t frame_count() const { return frames_.size(); }
  Frames frames_of(uint32_t stack) const;
  uint64_t frame_address(uint32_t frame) const { return frames_[frame].address; }
  // The load (index in Modules::loads) that mapped the frame when it was interned; -1: none.
  int32_t frame_module(uint32_t frame) const { return frames_[frame].module; }

  // Every load a frame may name; takes the intern mutex and the loader's lock.
  Modules modules() const;

  // Bytes this table holds: stack records, their return addresses and frame ids, the address index
  // and the hash slots.
  size_t memory_bytes() const;

 private:
  struct StackRecord {
    const uint64_t* addresses;  // what a lookup compares
    const uint32_t* frame_ids;  // what the report writes
    uint32_t depth;
    uint64_t hash;
  };
  struct SlotTable;
  struct FrameRecord {
    uint64_t address;
    int32_t module;
  };
  struct FrameKey {
    uint64_t address;
    int32_t module;
    bool operator==(const FrameKey& other) const {
      return address == other.address && module == other.module;
    }
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& key) const {
      return std::hash<uint64_t>()(key.address ^ (uint64_t(uint32_t(key.module)) << 48));
    }
  };

  static constexpr uint32_t kAbsent = UINT32_MAX;
  static constexpr size_t kArenaChunk = 16 * 1024;  // elements per chunk; a stack fits in one
  // A frame's record and its entry in frame_ids_ (a node: the pair, a next pointer, the cached
  // hash; its bucket pointer).
  static constexpr size_t kFrameBytes =
      sizeof(FrameRecord) + sizeof(FrameKey) + sizeof(uint32_t) + 3 * sizeof(void*);

  uint32_t find(const SlotTable& table, uint64_t hash, const uint64_t* frames, int depth) const;
  // Requires intern_mutex_: stores a new stack, its new frames, and its slot.
  uint32_t add_stack(uint64_t hash, const uint64_t* frames, int depth);
  // Requires intern_mutex_: whether a new stack of `depth` frames fits in the budget.
  bool fits_budget(int depth) const;
  // Requires intern_mutex_: the overflow stack, interned the first time (then with one warning).
  uint32_t overflow_stack();
  const uint64_t* store_addresses(const uint64_t* frames, int depth);
  const uint32_t* store_frame_ids(const uint64_t* frames, int depth);
  void insert_slot(SlotTable& table, uint64_t hash, uint32_t stack);
  void grow_slots();

  std::atomic<SlotTable*> slots_;
  AppendOnlyArray<StackRecord> stacks_;
  AppendOnlyArray<FrameRecord> frames_;

  // Written only under intern_mutex_.
  mutable std::mutex intern_mutex_;
  // The same address in two loads (a library unloaded, another loaded in its place) is two frames.
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  mutable ModuleHistory modules_;  // refreshed when a stack is new, and when a report asks
  ChunkArena<uint64_t, kArenaChunk> address_arena_;
  ChunkArena<uint32_t, kArenaChunk> frame_id_arena_;
  // Readers may still probe them: kept, and bounded (each is half the next, so together they are
  // smaller than the current table).
  std::vector<SlotTable*> retired_slot_tables_;
  size_t retired_slot_bytes_ = 0;
  size_t budget_bytes_;
  size_t stored_bytes_ = 0;  // the stacks' and frames' records, without the slots and the loads

  // Set once the budget is reached: new stacks then get overflow_stack_ without the mutex.
  std::atomic<bool> past_budget_{false};
  uint32_t overflow_stack_ = kAbsent;  // published by past_budget_
  std::atomic<uint64_t> past_budget_count_{0};
};

}  // namespace vramshim::attribution
