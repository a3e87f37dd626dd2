// One thread cache's part of a device's site figures (docs/design.md, "Thread caches").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shim/support/adaptive_mutex.h"
#include "shim/support/address_table.h"

namespace vramshim::attribution {

// Per site: the credit the thread's frees earned (bytes they took out of the site's live figure
// and its own allocations have not spent again) and the counts it owes the figures. An allocation
// by the thread without the figures lock spends credit and never more, so a site's live bytes, and
// the device's, are never above the figures the lock last saw; the tracker folds the ledger into
// the figures, under the figures lock and the ledger's lock, before every new peak and every read.
// Only the Tracker touches it: while it holds lock(), or the figures lock when the thread that
// holds the ledger is the one calling (see ThreadCache).
class SiteLedger {
 public:
  struct Entry {
    uint64_t key = 0;   // the site's key (the tracker's request), 0: an empty slot
    uint32_t tag = 0;   // the site's tag on the ledger's device
    int32_t site = -1;  // the site's index, for the event trace
    uint64_t credit_bytes = 0;
    int64_t live_units = 0;  // count units allocated minus freed through the ledger
    uint64_t total_bytes = 0;
    uint64_t total_units = 0;
  };
  static constexpr size_t kSlots = 128;
  static constexpr size_t kMaxEntries = kSlots * 3 / 4;

  explicit SiteLedger(int partition) : partition_(partition) {}
  SiteLedger(const SiteLedger&) = delete;
  SiteLedger& operator=(const SiteLedger&) = delete;

  int partition() const { return partition_; }
  // The lock of the thread cache the ledger serves; null while no cache has it.
  support::AdaptiveMutex* lock() const { return lock_; }
  void assign(support::AdaptiveMutex* lock) { lock_ = lock; }

  Entry* find(uint64_t key);
  // A new entry for `key` (not present); null when the ledger is full.
  Entry* add(uint64_t key, uint32_t tag, int32_t site);
  // visit(Entry&) for every entry.
  template <typename Visit>
  void for_each(Visit&& visit) {
    for (Entry& entry : slots_) {
      if (entry.key != 0) visit(entry);
    }
  }
  void clear();
  // Whether it may hold credit or counts (set by the tracker as it changes an entry, cleared as it
  // folds the ledger); read without the ledger's lock, so that a fold skips a ledger that owes
  // nothing without taking its lock.
  bool owes() const { return owes_.load(std::memory_order_relaxed); }
  void set_owes(bool owes) { owes_.store(owes, std::memory_order_relaxed); }

 private:
  static size_t home_of(uint64_t key);

  const int partition_;
  support::AdaptiveMutex* lock_ = nullptr;
  Entry slots_[kSlots];
  size_t count_ = 0;
  std::atomic<bool> owes_{false};
};

// In the header: a thread cache's every allocation and free asks it.
inline size_t SiteLedger::home_of(uint64_t key) {
  return static_cast<size_t>(support::mix_key(key) & (kSlots - 1));
}

inline SiteLedger::Entry* SiteLedger::find(uint64_t key) {
  for (size_t i = home_of(key);; i = (i + 1) & (kSlots - 1)) {
    if (slots_[i].key == key) return &slots_[i];
    if (slots_[i].key == 0) return nullptr;  // never full: at most kMaxEntries of kSlots
  }
}

}  // namespace vramshim::attribution
