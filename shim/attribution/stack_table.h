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

namespace vramshim::attribution {

// A known stack is found without a lock: a hash probe, then one comparison of its return addresses,
// which each stack keeps contiguous beside its frame ids; only a stack seen for the first time
// takes the table's mutex. Ids are never reused and entries never move, so a reader may walk ids
// below stack_count() / frame_count() while other threads intern.
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

  StackTable();
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // The id of the stack `frames[0..depth)` (innermost first), interning it if it is new.
  uint32_t intern(const uint64_t* frames, int depth);

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

  uint32_t find(const SlotTable& table, uint64_t hash, const uint64_t* frames, int depth) const;
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
  std::vector<SlotTable*> retired_slot_tables_;  // readers may still probe them
  size_t retired_slot_bytes_ = 0;
};

}  // namespace vramshim::attribution
