// Attribution of live GPU memory to allocation sites: what the hooks call on every allocation and
// free, and what the report writer reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "shim/attribution/allocation_kind.h"
#include "shim/attribution/byte_sampler.h"
#include "shim/attribution/event_trace.h"
#include "shim/attribution/live_table.h"
#include "shim/attribution/module_range.h"
#include "shim/attribution/site_ledger.h"
#include "shim/attribution/stack_capture.h"
#include "shim/attribution/stack_mode.h"
#include "shim/attribution/stack_table.h"
#include "shim/attribution/stack_table_budget.h"
#include "shim/support/adaptive_mutex.h"
#include "shim/support/address_table.h"

namespace vramshim::attribution {

// The report's name of a mode: "all", "off" or "sample".
const char* stack_mode_name(StackMode mode);

struct RewrittenStack {
  int depth;
  // Frames that name the program's code were left out: the stack gets the cut frame
  // (StackTable::kCutAddress).
  bool cut;
};

struct TrackerOptions {
  StackMode stacks = StackMode::kAll;
  uint64_t sample_bytes = 0;  // mean bytes between samples; used with StackMode::kSample
  int stack_depth = 64;       // VRAMSHIM_STACK_DEPTH, clamped to [1, StackCapture::kMaxDepth]
  Unwinder unwinder = Unwinder::kLibunwind;  // falls back to libgcc when libunwind is missing
  // Leading frames inside it are dropped: by default the module this code is linked into (the
  // shim); {} keeps every frame.
  ModuleRange own_module = ModuleRange::of_this_module();
  uint64_t sample_seed = 0;  // 0: seeded from the clock
  // VRAMSHIM_STACK_TABLE: host memory for the interned stacks (StackTable).
  uint64_t stack_table_bytes = kDefaultStackTableBytes;
  // Rewrites every captured stack before it is interned: the shim merges the Python frames the
  // thread runs into it (shim/python). Writes at most `max_depth` frames. Null: stacks are interned
  // as captured, and a stack the depth cut gets the cut frame.
  RewrittenStack (*rewrite_stack)(const StackCapture::Frames& native, uint64_t* out,
                                  int max_depth) = nullptr;
  // Called by the walks over every site (live_bytes_by_site, live_leaders) each time they let go
  // of a device's figures lock between two chunks of its sites, the lock free: tests allocate there
  // to show a walk never holds allocations off for all the sites. Null: nothing is called.
  void (*between_site_holds)(int device) = nullptr;
};

// The figures of one site, a (stack, kind) pair: those of shim/support/site_figures.def. With
// sampling they are unbiased estimates.
struct SiteFigures {
  int32_t stack;  // -1 when stacks are off
  AllocationKind kind;
#define VRAMSHIM_SITE_FIGURE(name, ...) uint64_t name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
};

// Peaks are per device: a site's peak_bytes and bytes_at_peak, and the process's peak, are the sums
// over the devices of each device's (the same as the process's for a process on one device).
struct TrackerSnapshot {
  std::vector<SiteFigures> sites;
  uint64_t in_use_bytes;       // attributed live bytes now (the sum of live_bytes)
  uint64_t peak_in_use_bytes;  // the sum of each device's peak (the sum of bytes_at_peak)
  uint64_t peak_time_ns;       // CLOCK_REALTIME when the latest device peak was reached; 0: none
  size_t stack_count;          // stacks [0, stack_count) are readable in stacks()
};

struct TrackerMemory {
  size_t live_allocations;
  size_t live_table_bytes;
  size_t stacks;
  size_t stack_table_bytes;
  size_t sites;
  size_t site_bytes;
};

// Thread-safe. Stacks are unwound before any lock is taken; a known stack costs a lock-free hash
// probe; the live table is sharded. The figures are kept per device, each device's behind a mutex
// of its own held for a few additions only and never while calling out, so threads allocating on
// different GPUs never meet, and a report writer waiting on one waits for at most one update. Peaks
// are per device: a GPU runs out of its own memory, whatever the others hold (docs/design.md,
// "Attribution"). The device's mutex spins briefly before it sleeps (support::AdaptiveMutex).
class Tracker {
 public:
  explicit Tracker(const TrackerOptions& options);
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Call after the allocation succeeded, before the pointer is returned to the program.
  // key: the pointer, or the handle for kVmm (keys of live allocations must be distinct; 0 is
  // ignored). size: bytes allocated; stream: for kAsync, else 0. The pools' allocations are
  // tagged instead (tag_locked() below). Never throws: if host memory runs out the allocation is
  // simply not tracked.
  void on_alloc(uint64_t key, uint64_t size, AllocationKind kind, int device,
                uint64_t stream) noexcept;

  // on_alloc with the stack (innermost first) given instead of unwound here, for callers that
  // capture stacks themselves. The sampling decision and stacks = off apply as in on_alloc.
  void on_alloc_with_frames(uint64_t key, uint64_t size, AllocationKind kind, int device,
                            uint64_t stream, const uint64_t* frames, int depth) noexcept;

  // Call before the memory is released to the pool or the driver (so the key cannot be handed out
  // again first). An unknown key (untracked or unsampled allocation) is ignored.
  void on_free(uint64_t key) noexcept;
  // on_free in two steps, for a free the driver may refuse: take() before the driver's call takes
  // the allocation out of the live table (the driver may hand the key out again as soon as it
  // freed it), its bytes still in its site's figures; then end_free() once the driver freed it, or
  // restore() when it refused (the memory stays allocated, with its site). take() gives none for an
  // unknown key.
  std::optional<LiveAllocation> take(uint64_t key) noexcept;
  void end_free(const LiveAllocation& taken) noexcept;
  void restore(const LiveAllocation& taken) noexcept;

  // Allocations whose record the caller keeps (the pool, in its block), so that a free needs no
  // lookup of the tracker's own: prepare() before the allocation, outside any lock (the sampling
  // decision and the stack; 0: not to be tracked); tag_locked() once it succeeded, with
  // prepare()'s request and the allocation's device, returns the tag to keep (0: untracked);
  // untag_locked() at the free. Both require the caller to hold figures_lock(device) of the tag's
  // device (the pool makes that lock its own, so a pair takes one lock, not two), and both return
  // the site (its index in snapshot()'s sites; -1 when untracked).
  uint64_t prepare(uint64_t size, AllocationKind kind) noexcept;
  // The interned stack of the calling code (-1 with stacks off, or when out of host memory),
  // whatever the sampling (for the call an out-of-memory explanation is about).
  int32_t stack_of_this_call() noexcept;
  support::AdaptiveMutex& figures_lock(int device) {
    return partitions_[partition_of_device(device)].mutex;
  }
  // The clock of the events told under figures_lock(device) (EventTrace::record_under_lock), which
  // that lock guards.
  EventTrace::LockClock& event_clock(int device) {
    return partitions_[partition_of_device(device)].event_clock;
  }
  // With `ledger` (of the same device), the ledger is made ready to take this allocation's free as
  // credit (see below).
  uint32_t tag_locked(uint64_t request, uint64_t size, int device, int32_t* site,
                      SiteLedger* ledger = nullptr) noexcept;
  int32_t untag_locked(uint32_t tag, uint64_t size) noexcept;

  // Ledgers of thread caches (SiteLedger; docs/design.md, "Thread caches"). open_ledger and
  // close_ledger require figures_lock(device) of the ledger's device; `cache_lock` is the lock of
  // the cache the ledger serves, which the tracker takes (after the figures lock) to fold the
  // ledger. Null when out of host memory.
  SiteLedger* open_ledger(int device, support::AdaptiveMutex& cache_lock) noexcept;
  void close_ledger(SiteLedger& ledger) noexcept;  // folds it; it may be handed out again
  // tag_locked and untag_locked without the figures lock, with the ledger's lock held: they spend
  // and earn the credit of the site of `request`. false, with nothing changed, when the ledger does
  // not know the site or (spending) its credit there is short of the allocation's weight; the
  // caller then takes the figures lock. `site`: as tag_locked's.
  bool spend_credit(SiteLedger& ledger, uint64_t request, uint64_t size, uint32_t* tag,
                    int32_t* site) noexcept;
  bool earn_credit(SiteLedger& ledger, uint64_t request, uint64_t size, int32_t* site) noexcept;
  // The request (prepare()'s value) a tag was given for; requires the figures lock of its device.
  uint64_t request_of_tag(uint32_t tag) const;

  // The live allocation of `key`, its site as in snapshot().
  std::optional<LiveAllocation> find(uint64_t key) const;

  // A copy of every site's figures and of the peak, consistent for each device.
  TrackerSnapshot snapshot() const;

  // Every site's live bytes by site index (snapshot()'s order), for the site history: copied a few
  // thousand sites per hold of the figures' lock, so allocating threads never wait long.
  void live_bytes_by_site(std::vector<uint64_t>* out) const;

  // The `count` sites holding the most live bytes, most first, and the live bytes of every kind,
  // without copying every site (for explaining an out-of-memory failure, and `sites N`): read a
  // few thousand sites per hold of the figures' lock, as live_bytes_by_site. Every device's,
  // summed; or, for an out-of-memory failure, one device's (`device` >= 0) and of the kinds that
  // take device memory only (not pinned host memory).
  struct LeaderScope {
    int device = -1;
    bool device_memory_only = false;
  };
  struct LiveLeaders {
    std::vector<SiteFigures> sites;
    size_t live_sites = 0;  // the sites holding live bytes, listed or not
    uint64_t live_bytes_by_kind[kAllocationKindCount] = {};
  };
  LiveLeaders live_leaders(size_t count, LeaderScope scope) const;
  LiveLeaders live_leaders(size_t count) const { return live_leaders(count, LeaderScope()); }

  const StackTable& stacks() const { return stacks_; }
  const TrackerOptions& options() const { return options_; }
  // The unwinder in use: options().unwinder unless libunwind could not be loaded.
  Unwinder unwinder() const { return capture_.unwinder(); }
  TrackerMemory memory_usage() const;
  // Attributed live bytes now (estimated when sampling), without copying the sites.
  uint64_t in_use_bytes() const;

 private:
  // The figures of one site on one device.
  struct Site {
    // Bytes side by side, then counts: with each byte figure next to its count, gcc adds a weight
    // as one vector that it loads through the stack, a failed store forwarding (3-5 ns a pair).
    uint64_t live_bytes;
    uint64_t total_bytes;
    uint64_t live_units;  // allocation counts in kCountUnit fixed point
    uint64_t total_units;
    uint64_t peak_bytes;
    // Lazy snapshot at the device's peak: valid for peak epoch at_peak_epoch. A site untouched
    // since the latest peak still holds at that peak what it holds now.
    uint64_t at_peak_bytes;
    uint64_t at_peak_epoch;
  };

  struct SiteEntry {
    uint64_t key;  // the stack and kind, see site_key
    uint32_t site;
  };

  // One device's figures. Its sites are dense: local index -> figures and global site. Its
  // ledgers' credits and counts are part of its figures until folded in (fold_ledgers).
  struct alignas(64) Partition {
    mutable support::AdaptiveMutex mutex;
    EventTrace::LockClock event_clock;
    std::vector<std::unique_ptr<SiteLedger>> ledgers;  // never destroyed; unassigned ones reused
    std::vector<Site> sites;
    std::vector<uint32_t> global_site;
    std::vector<uint64_t> site_key;  // local index -> the site's key (a request)
    support::AddressTable<SiteEntry> local_by_key;
    uint64_t in_use_bytes = 0;
    uint64_t peak_in_use_bytes = 0;
    uint64_t peak_time_ns = 0;
    uint64_t peak_epoch = 0;  // incremented at every new peak of the device
  };
  // Devices past the last partition share it.
  static constexpr int kPartitions = 64;

  // A tag names the partition and the local site: 6 bits and 26 bits (+1, so never 0).
  static constexpr int kLocalBits = 26;
  static uint32_t make_tag(int partition, uint32_t local);
  static int partition_of_tag(uint32_t tag) { return static_cast<int>(tag >> kLocalBits); }
  static uint32_t local_of_tag(uint32_t tag) { return (tag & ((1u << kLocalBits) - 1)) - 1; }
  static int partition_of_device(int device);
  // untag_locked() for the tracker's own live table, taking the tag's partition lock.
  void untag(uint32_t tag, uint64_t size) noexcept;

  AllocationWeight weight_of(uint64_t size) const;
  void record_alloc(uint64_t key, uint64_t size, AllocationKind kind, int device, uint64_t stream,
                    int32_t stack);
  // The stack of the calling code, interned (-1 with stacks off). Throws when out of host memory.
  int32_t capture_stack();
  static uint64_t site_key(int32_t stack, AllocationKind kind);
  static int32_t stack_of_key(uint64_t key);
  static AllocationKind kind_of_key(uint64_t key);
  // The tag of the site `key` in `partition`, adding the site (here and globally) when new.
  // Requires the partition's lock; throws when out of host memory or local sites.
  uint32_t tag_for_key(Partition& partition, int index, uint64_t key);
  uint32_t global_site_for_key(uint64_t key);  // takes sites_mutex_
  static void sync_peak_snapshot(const Partition& partition, Site& site);
  void add(uint32_t tag, AllocationWeight weight);  // requires the partition's lock
  // Requires the partition's lock; takes each ledger's.
  void fold_ledgers(Partition& partition) const;
  void fold_ledger(Partition& partition, SiteLedger& ledger) const;  // and the ledger's lock
  int32_t subtract(uint32_t tag, AllocationWeight weight);  // requires the partition's lock
  // Calls visit(partition, local) for every site of every device, holding a device's figures lock
  // for kSitesPerHold sites at a time (its ledgers folded at the first), so allocating threads
  // never wait for a walk over all the sites.
  static constexpr size_t kSitesPerHold = 4096;
  // `device` >= 0: only that device's sites.
  template <typename Visit>
  void visit_sites_in_holds(Visit visit, int device = -1) const;
  // Live allocations keep their tag in LiveAllocation::site; this turns it into the global site.
  LiveAllocation with_global_site(LiveAllocation live) const;

  const TrackerOptions options_;
  const StackCapture capture_;
  ByteSampler sampler_;
  StackTable stacks_;
  LiveTable live_;

  // Mutable: folding the ledgers (done by readers too) moves figures, it changes none.
  mutable Partition partitions_[kPartitions];
  // Every site (stack and kind) by global index; taken when a device meets a site new to it.
  mutable std::mutex sites_mutex_;
  std::vector<uint64_t> site_keys_;
  support::AddressTable<SiteEntry> global_by_key_;
};

inline AllocationWeight Tracker::weight_of(uint64_t size) const {
  if (options_.stacks == StackMode::kSample) return sampler_.weight_of(size);
  return {size, kCountUnit};
}
inline bool Tracker::spend_credit(SiteLedger& ledger, uint64_t request, uint64_t size,
                                  uint32_t* tag, int32_t* site) noexcept {
  SiteLedger::Entry* entry = ledger.find(request);
  if (entry == nullptr) return false;
  const AllocationWeight weight = weight_of(size);
  if (entry->credit_bytes < weight.bytes) return false;
  entry->credit_bytes -= weight.bytes;
  entry->live_units += static_cast<int64_t>(weight.count_units);
  entry->total_bytes += weight.bytes;
  entry->total_units += weight.count_units;
  ledger.set_owes(true);
  *tag = entry->tag;
  *site = entry->site;
  return true;
}
inline bool Tracker::earn_credit(SiteLedger& ledger, uint64_t request, uint64_t size,
                                 int32_t* site) noexcept {
  SiteLedger::Entry* entry = ledger.find(request);
  if (entry == nullptr) return false;
  const AllocationWeight weight = weight_of(size);
  entry->credit_bytes += weight.bytes;
  entry->live_units -= static_cast<int64_t>(weight.count_units);
  ledger.set_owes(true);
  *site = entry->site;
  return true;
}

}  // namespace vramshim::attribution
