// What a pool keeps for the attribution with each allocation it hands out: a tag that the
// attribution gives when the allocation is made and takes back when it is freed. Both calls are
// made under the pool's lock, so the attribution's figures change in the order in which the pool
// hands memory out and takes it back, and a free finds the tag with the pool's one lookup of the
// block. A thread cache (ThreadCache) tags and untags under its own lock instead, through a ledger
// of per-site credits that keeps the same figures exact (docs/design.md, "Thread caches").
#pragma once

#include <cstdint>

#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

// The attribution's part of one thread cache; what it is, is the tagger's business.
class AllocationLedger;

// Who may have used an address last, as the attribution was told. The attribution orders each
// event after the address's previous one; told where that one came from, it orders it after the
// thread's own or the lock's own only, which costs less (EventTrace::record_after_own and
// record_under_lock).
enum class LastUse : uint8_t {
  kAnyThread,
  // For a thread cache's tag_from_credit and untag_to_credit: every allocation and free of the
  // address the attribution was told of came from the calling thread, or before the thread's last
  // call with kAnyThread returned.
  kThisThread,
  // For tag() and untag(): the address's previous allocation or free the attribution was told of
  // was told by tag() or untag(), under the same figures lock.
  kThisLock,
};

class AllocationTagger {
 public:
  virtual ~AllocationTagger() = default;
  // The lock that guards the figures tag() and untag() change for `device`: the pool of a context
  // on that device takes it as its own lock (shared with the pools of the device's other
  // contexts), so a pool's call and the figures it changes take one lock between them.
  virtual support::AdaptiveMutex& figures_lock(int device) noexcept = 0;
  // `request`: what the caller prepared for this allocation before calling the pool (0: nothing to
  // attribute); `size`: the bytes handed out at `ptr` on `device`; `last_use`: kAnyThread or
  // kThisLock. Returns the tag to keep, 0 for none. Called with figures_lock(device) held; must
  // not block or call the pool. With `ledger` (a thread cache's), the ledger is made ready to take
  // this allocation's free as credit.
  virtual uint32_t tag(int device, uint64_t request, uint64_t size, uint64_t ptr, LastUse last_use,
                       AllocationLedger* ledger) noexcept = 0;
  // The allocation of `tag` (nonzero) and `size` at `ptr` on `device` was freed; `ptr` 0: forgotten
  // with its context. Called with figures_lock(device) held.
  virtual void untag(int device, uint32_t tag, uint64_t size, uint64_t ptr,
                     LastUse last_use) noexcept = 0;

  // A ledger for a thread cache whose lock is `cache_lock`; null when none can be made. Called with
  // figures_lock(device) held; the tagger takes `cache_lock` (after the figures lock) whenever it
  // folds the ledger's credits into the figures.
  virtual AllocationLedger* open_ledger(int device,
                                        support::AdaptiveMutex& cache_lock) noexcept = 0;
  // Folds the ledger into the figures and forgets it. Called with figures_lock(device) held.
  virtual void close_ledger(int device, AllocationLedger& ledger) noexcept = 0;
  // tag() and untag() for a thread cache, called with the cache's lock held and not the figures
  // lock: false, and nothing changed, when the ledger's credit at the site of `request` does not
  // cover the allocation (or the ledger does not know the site); the pool then takes its lock.
  // untag_to_credit with `request` 0 finds the site from `tag`, which requires
  // figures_lock(device).
  virtual bool tag_from_credit(AllocationLedger& ledger, int device, uint64_t request,
                               uint64_t size, uint64_t ptr, LastUse last_use,
                               uint32_t* tag) noexcept = 0;
  virtual bool untag_to_credit(AllocationLedger& ledger, int device, uint64_t request, uint32_t tag,
                               uint64_t size, uint64_t ptr, LastUse last_use) noexcept = 0;
};

}  // namespace vramshim::pool
