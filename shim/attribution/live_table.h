// The allocations that are live now, by key (device pointer, or handle for VMM allocations); not
// the pools', whose tags their blocks keep (runtime/tracker_tagger.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include "shim/support/address_table.h"

namespace vramshim::attribution {

struct LiveAllocation {
  uint64_t key;     // never 0
  uint64_t size;    // bytes allocated
  uint64_t stream;  // the stream of a stream-ordered allocation, else 0
  uint32_t site;    // the site: in the table, the tracker's tag; from Tracker::find, its index
  int32_t device;
};

// Open-addressing hash tables in 64 shards, each behind its own mutex, so threads that allocate at
// once rarely meet. A lock is held for one probe sequence only.
class LiveTable {
 public:
  LiveTable() = default;
  LiveTable(const LiveTable&) = delete;
  LiveTable& operator=(const LiveTable&) = delete;

  // Records `allocation`; returns the entry it replaced (a key that was never retired), if any.
  std::optional<LiveAllocation> insert(const LiveAllocation& allocation);
  // Removes and returns the entry of `key`; nullopt for a key that is not live.
  std::optional<LiveAllocation> erase(uint64_t key);
  std::optional<LiveAllocation> find(uint64_t key) const;

  size_t size() const;
  size_t memory_bytes() const;

 private:
  static constexpr int kShardCount = 64;

  struct alignas(64) Shard {
    mutable std::mutex mutex;
    support::AddressTable<LiveAllocation> table;
  };

  Shard& shard_of(uint64_t key);
  const Shard& shard_of(uint64_t key) const;

  Shard shards_[kShardCount];
};

}  // namespace vramshim::attribution
