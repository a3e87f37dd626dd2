// Interns stacks of return addresses into dense stack ids, and return addresses into dense frame
// ids.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "shim/attribution/append_only_array.h"
#include "shim/attribution/chunk_arena.h"

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

  StackTable();
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // The id of the stack `frames[0..depth)` (innermost first), interning it if it is new.
  uint32_t intern(const uint64_t* frames, int depth);

  size_t stack_count() const { return stacks_.size(); }
  size_t frame_count() const { return frame_addresses_.size(); }
  Frames frames_of(uint32_t stack) const;
  uint64_t frame_address(uint32_t frame) const { return frame_addresses_[frame]; }

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

  static constexpr uint32_t kAbsent = UINT32_MAX;
  static constexpr size_t kArenaChunk = 16 * 1024;  // elements per chunk; a stack fits in one

  uint32_t find(const SlotTable& table, uint64_t hash, const uint64_t* frames, int depth) const;
  const uint64_t* store_addresses(const uint64_t* frames, int depth);
  const uint32_t* store_frame_ids(const uint64_t* frames, int depth);
  void insert_slot(SlotTable& table, uint64_t hash, uint32_t stack);
  void grow_slots();

  std::atomic<SlotTable*> slots_;
  AppendOnlyArray<StackRecord> stacks_;
  AppendOnlyArray<uint64_t> frame_addresses_;

  // Written only under intern_mutex_.
  mutable std::mutex intern_mutex_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_by_address_;
  ChunkArena<uint64_t, kArenaChunk> address_arena_;
  ChunkArena<uint32_t, kArenaChunk> frame_id_arena_;
  std::vector<SlotTable*> retired_slot_tables_;  // readers may still probe them
  size_t retired_slot_bytes_ = 0;
};

}  // namespace vramshim::attribution
