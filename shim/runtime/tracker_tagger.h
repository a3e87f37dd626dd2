// The pools' AllocationTagger: device memory the pools hand out is attributed by the tracker, with
// the site's tag kept in the pool's block instead of the tracker's live table, and each allocation
// and free goes into the event trace (under the pool's lock, stamped by that lock's clock, or a
// thread cache's, so an address is never seen handed out again before its free). A pool's lock is
// its device's figures lock in the tracker; a thread cache's ledger is the tracker's SiteLedger.
#pragma once

#include "shim/attribution/event_trace.h"
#include "shim/attribution/site_ledger.h"
#include "shim/attribution/tracker.h"
#include "shim/pool/allocation_tagger.h"

namespace vramshim::runtime {

class TrackerTagger : public pool::AllocationTagger {
 public:
  TrackerTagger(attribution::Tracker& tracker, attribution::EventTrace& trace)
      : tracker_(tracker), trace_(trace) {}
  support::AdaptiveMutex& figures_lock(int device) noexcept override {
    return tracker_.figures_lock(device);
  }
  uint32_t tag(int device, uint64_t request, uint64_t size, uint64_t ptr, pool::LastUse last_use,
               pool::AllocationLedger* ledger) noexcept override {
    int32_t site = -1;
    const uint32_t tag = tracker_.tag_locked(request, size, device, &site, site_ledger(ledger));
    record_under_lock(last_use, attribution::EventType::kAlloc, device, ptr, size, site);
    return tag;
  }
  void untag(int device, uint32_t tag, uint64_t size, uint64_t ptr,
             pool::LastUse last_use) noexcept override {
    const int32_t site = tracker_.untag_locked(tag, size);
    if (ptr != 0)
      record_under_lock(last_use, attribution::EventType::kFree, device, ptr, size, site);
  }

  pool::AllocationLedger* open_ledger(int device,
                                      support::AdaptiveMutex& cache_lock) noexcept override {
    return reinterpret_cast<pool::AllocationLedger*>(tracker_.open_ledger(device, cache_lock));
  }
  void close_ledger(int, pool::AllocationLedger& ledger) noexcept override {
    tracker_.close_ledger(*site_ledger(&ledger));
  }
  bool tag_from_credit(pool::AllocationLedger& ledger, int device, uint64_t request, uint64_t size,
                       uint64_t ptr, pool::LastUse last_use, uint32_t* tag) noexcept override {
    int32_t site = -1;
    if (!tracker_.spend_credit(*site_ledger(&ledger), request, size, tag, &site)) return false;
    record(last_use, attribution::EventType::kAlloc, device, ptr, size, site);
    return true;
  }
  bool untag_to_credit(pool::AllocationLedger& ledger, int device, uint64_t request, uint32_t tag,
                       uint64_t size, uint64_t ptr, pool::LastUse last_use) noexcept override {
    int32_t site = -1;
    if (request == 0) request = tracker_.request_of_tag(tag);
    if (!tracker_.earn_credit(*site_ledger(&ledger), request, size, &site)) return false;
    record(last_use, attribution::EventType::kFree, device, ptr, size, site);
    return true;
  }

 private:
  // The figures lock of `device` is held: its clock orders the events told under it.
  void record_under_lock(pool::LastUse last_use, attribution::EventType type, int device,
                         uint64_t ptr, uint64_t size, int32_t site) noexcept {
    trace_.record_under_lock(tracker_.event_clock(device), last_use == pool::LastUse::kThisLock,
                             type, device, ptr, size, 0, site);
  }
  void record(pool::LastUse last_use, attribution::EventType type, int device, uint64_t ptr,
              uint64_t size, int32_t site) noexcept {
    if (last_use == pool::LastUse::kThisThread) {
      trace_.record_after_own(type, device, ptr, size, 0, site);
    } else {
      trace_.record(type, device, ptr, size, 0, site);
    }
  }

  // The pool passes back the ledgers this tagger gave it.
  static attribution::SiteLedger* site_ledger(pool::AllocationLedger* ledger) {
    return reinterpret_cast<attribution::SiteLedger*>(ledger);
  }

  attribution::Tracker& tracker_;
  attribution::EventTrace& trace_;
};

}  // namespace vramshim::runtime
