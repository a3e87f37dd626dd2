// Attribution of live GPU memory to allocation sites: what the hooks call on every allocation and
// free, and what the report writer reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "shim/attribution/allocation_kind.h"
#include "shim/attribution/byte_sampler.h"
#include "shim/attribution/live_table.h"
#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "shim/attribution/stack_mode.h"
#include "shim/attribution/stack_table.h"
#include "shim/support/address_table.h"

namespace vramshim::attribution {

// The report's name of a mode: "all", "off" or "sample".
const char* stack_mode_name(StackMode mode);

struct TrackerOptions {
  StackMode stacks = StackMode::kAll;
  uint64_t sample_bytes = 0;  // mean bytes between samples; used with StackMode::kSample
  int stack_depth = 64;       // VRAMSHIM_STACK_DEPTH, clamped to [1, StackCapture::kMaxDepth]
  Unwinder unwinder = Unwinder::kLibunwind;  // falls back to libgcc when libunwind is missing
  // Leading frames inside it are dropped: by default the module this code is linked into (the
  // shim); {} keeps every frame.
  ModuleRange own_module = ModuleRange::of_this_module();
  uint64_t sample_seed = 0;  // 0: seeded from the clock
  // Rewrites every captured stack before it is interned: the shim merges the Python frames the
  // thread runs into it (shim/python). Returns the new depth, at most `max_depth`. Null: stacks are
  // interned as captured.
  int (*rewrite_stack)(const uint64_t* native, int depth, uint64_t* out, int max_depth) = nullptr;
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

struct TrackerSnapshot {
  std::vector<SiteFigures> sites;
  uint64_t in_use_bytes;       // attributed live bytes now (the sum of live_bytes)
  uint64_t peak_in_use_bytes;  // the most in_use_bytes has been (the sum of bytes_at_peak)
  uint64_t peak_time_ns;       // CLOCK_REALTIME when that peak was reached; 0 before any
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
// probe; the live table is sharded; the per-site figures and the process peak share one mutex held
// for a few additions only and never while calling out, so a report writer waiting on it waits for
// at most one such update. (A spin lock here made two allocating threads slower than one, and
// burned the CPU they waited on.)
class Tracker {
 public:
  explicit Tracker(const TrackerOptions& options);
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Call after the allocation succeeded, before the pointer is returned to the program.
  // key: the pointer, or the handle for kVmm (keys of live allocations must be distinct; 0 is
  // ignored). size: bytes as served; requested: bytes asked for; stream: for kAsync, else 0.
  // Never throws: if host memory runs out the allocation is simply not tracked.
  void on_alloc(uint64_t key, uint64_t size, uint64_t requested, AllocationKind kind, int device,
                uint64_t stream) noexcept;

  // on_alloc with the stack (innermost first) given instead of unwound here, for callers that
  // capture stacks themselves. The sampling decision and stacks = off apply as in on_alloc.
  void on_alloc_with_frames(uint64_t key, uint64_t size, uint64_t requested, AllocationKind kind,
                            int device, uint64_t stream, const uint64_t* frames,
                            int depth) noexcept;

  // Call before the memory is released to the pool or the driver (so the key cannot be handed out
  // again first). An unknown key (untracked or unsampled allocation) is ignored.
  void on_free(uint64_t key) noexcept;

  // Allocations whose record the caller keeps (the pool, in its block), so that a free needs no
  // lookup of the tracker's own: prepare() before the allocation, outside any lock (the sampling
  // decision and the stack; 0: not to be tracked); tag() once it succeeded, with prepare()'s
  // request, returns the tag to keep (0: untracked); untag() at the free. tag() and untag() take
  // only the figures' lock, so the caller may hold its own.
  uint64_t prepare(uint64_t size, AllocationKind kind) noexcept;
  // The interned stack of the calling code (-1 with stacks off, or when out of host memory),
  // whatever the sampling (for the call an out-of-memory explanation is about).
  int32_t stack_of_this_call() noexcept;
  uint32_t tag(uint64_t request, uint64_t size) noexcept;
  void untag(uint32_t tag, uint64_t size) noexcept;

  std::optional<LiveAllocation> find(uint64_t key) const;

  // A consistent copy of every site's figures and of the process peak.
  TrackerSnapshot snapshot() const;

  // Every site's live bytes by site index (snapshot()'s order), for the site history: copied a few
  // thousand sites per hold of the figures' lock, so allocating threads never wait long.
  void live_bytes_by_site(std::vector<uint64_t>* out) const;

  // The `count` sites holding the most live bytes, most first, and the live bytes of every kind,
  // without copying every site (for explaining an out-of-memory failure).
  struct LiveLeaders {
    std::vector<SiteFigures> sites;
    uint64_t live_bytes_by_kind[kAllocationKindCount] = {};
  };
  LiveLeaders live_leaders(size_t count) const;

  const StackTable& stacks() const { return stacks_; }
  const TrackerOptions& options() const { return options_; }
  // The unwinder in use: options().unwinder unless libunwind could not be loaded.
  Unwinder unwinder() const { return capture_.unwinder(); }
  TrackerMemory memory_usage() const;
  // Attributed live bytes now (estimated when sampling), without copying the sites.
  uint64_t in_use_bytes() const;

 private:
  struct Site {
    int32_t stack;
    AllocationKind kind;
    uint64_t live_bytes;
    uint64_t live_units;  // allocation counts in kCountUnit fixed point
    uint64_t total_bytes;
    uint64_t total_units;
    uint64_t peak_bytes;
    // Lazy snapshot at the process peak: valid for peak epoch at_peak_epoch. A site untouched since
    // the latest peak still holds at that peak what it holds now.
    uint64_t at_peak_bytes;
    uint64_t at_peak_epoch;
  };

  struct SiteEntry {
    uint64_t key;  // the stack and kind, see site_for
    uint32_t site;
  };

  AllocationWeight weight_of(uint64_t size) const;
  void record_alloc(uint64_t key, uint64_t size, uint64_t requested, AllocationKind kind,
                    int device, uint64_t stream, int32_t stack);
  // The stack of the calling code, interned (-1 with stacks off). Throws when out of host memory.
  int32_t capture_stack();
  static uint64_t site_key(int32_t stack, AllocationKind kind);
  uint32_t site_for(int32_t stack, AllocationKind kind);  // requires figures_mutex_
  uint32_t site_for_key(uint64_t key);                    // requires figures_mutex_
  void sync_peak_snapshot(Site& site) const;              // requires figures_mutex_
  void add(uint32_t site, AllocationWeight weight);
  void subtract(uint32_t site, AllocationWeight weight);

  const TrackerOptions options_;
  const StackCapture capture_;
  ByteSampler sampler_;
  StackTable stacks_;
  LiveTable live_;

  mutable std::mutex figures_mutex_;
  std::vector<Site> sites_;
  support::AddressTable<SiteEntry> site_by_stack_and_kind_;
  uint64_t in_use_bytes_ = 0;
  uint64_t peak_in_use_bytes_ = 0;
  uint64_t peak_time_ns_ = 0;
  uint64_t peak_epoch_ = 0;  // incremented at every new process peak
};

}  // namespace vramshim::attribution
