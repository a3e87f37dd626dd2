// The caching allocator of one CUDA context: serves cuMemAlloc/cuMemFree from cached segments and
// decides when a freed block may be handed out again.
#pragma once

#include <cuda.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "shim/pool/allocation_tagger.h"
#include "shim/pool/block_store.h"
#include "shim/pool/capture_state.h"
#include "shim/pool/device_api.h"
#include "shim/pool/device_caches.h"
#include "shim/pool/device_limit.h"
#include "shim/pool/pool_options.h"
#include "shim/pool/pool_stats.h"
#include "shim/pool/stream_set.h"
#include "shim/pool/thread_cache.h"
#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

struct FreeResult {
  // false: no segment of the pool holds the pointer; the caller forwards the free to the driver.
  bool owned;
  // When owned: what cuMemFree returns. A pointer inside a segment that starts no allocated block
  // (a double free, an interior pointer) gets the driver's CUDA_ERROR_INVALID_VALUE and never
  // reaches the driver, which would free the whole segment.
  CUresult status;
};

// Why an allocation returned CUDA_ERROR_OUT_OF_MEMORY.
enum class OutOfMemoryCause : uint8_t {
  kDriver,    // the driver refused, even after the pool emptied its cache and retried
  kLimit,     // VRAMSHIM_LIMIT (or the `limit` command) would have been passed
  kTooLarge,  // larger than any allocation the pool can make
};

// One block of a segment, for the picture of the pool (reports, out-of-memory failures).
struct BlockPicture {
  uint64_t offset;  // from the segment's base
  uint64_t size;
  BlockState state;
  uint64_t requested;  // while allocated: the rounded request, else 0
  uint32_t tag;        // while allocated: the attribution's tag (AllocationTagger), else 0
};

// A segment the pool holds and all its blocks, in address order.
struct SegmentPicture {
  CUdeviceptr base;
  uint64_t size;
  std::vector<BlockPicture> blocks;
  int device = 0;  // set by the registry
};

struct PoolPicture {
  std::vector<SegmentPicture> segments;
  uint64_t free_bytes = 0;     // in free blocks
  uint64_t pending_bytes = 0;  // freed, waiting for a fence
  uint64_t largest_free_block = 0;
};

struct FlushResult {
  uint64_t segment_bytes = 0;         // the pool's segments handed back to the driver
  uint64_t stream_ordered_bytes = 0;  // released by trimming the stream-ordered pools, when known
  uint64_t total() const { return segment_bytes + stream_ordered_bytes; }
};

// See docs/design.md, "The pool" and "The reuse rule".
//
// Locking: one mutex guards the bookkeeping and is never held across a DeviceApi call; it spins
// briefly before it sleeps (support::AdaptiveMutex). It is the device lock of the pool's
// DeviceLimit, shared with the pools of the device's other contexts, under which the limit is
// charged; with a tagger, that lock must be the tagger's figures lock of the device (the
// constructor throws std::invalid_argument otherwise).
// Fence work (issuing, polling, waiting, synchronizing) is done by one thread at a time, the one
// that holds the "fence claim"; only it touches the fence queue, so fences stay valid while it
// calls the driver unlocked. Segments leave the bookkeeping before they are freed to the driver.
//
// Thread caches (ThreadCache; docs/design.md, "Thread caches"): a thread that passes its cache to
// allocate() and free() is served from it under the cache's own lock when it can be, else under
// the device lock, which also refills the cache. What is freed to a cache waits for a fence as any
// free does (a legacy-stream marker of the thread's own, or the pool's fences). Whatever needs the
// pool's exact figures or every free block (a new peak, a refused charge, statistics, a flush, a
// stricter reuse mode) folds or drains the caches first.
class CachingPool {
 public:
  // `tagger` (optional) is told of every allocation handed out and taken back on `device`;
  // `caches` (optional): the device's thread caches, shared by its pools (none: no thread caches).
  CachingPool(DeviceApi& api, const PoolOptions& options, DeviceLimit& limit,
              const CaptureState& capture, AllocationTagger* tagger = nullptr, int device = 0,
              DeviceCaches* caches = nullptr);
  // Calls nothing: what the pool holds is left to the driver (process exit, fork child).
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  // cuMemAlloc semantics; CUDA_ERROR_OUT_OF_MEMORY only when the driver refused even after the pool
  // emptied its cache, or when the device's limit would be passed. `request` goes to the tagger;
  // `cause` (optional) says why an out-of-memory failure happened. `cache` (optional): the calling
  // thread's cache of this pool.
  CUresult allocate(size_t bytes, CUdeviceptr* ptr, uint64_t request = 0,
                    OutOfMemoryCause* cause = nullptr, ThreadCache* cache = nullptr);
  FreeResult free(CUdeviceptr ptr, ThreadCache* cache = nullptr);

  // A cache of this pool for the calling thread, to pass to allocate() and free() from that thread
  // only; null when the pool has none to give (thread caches off, the pool off, none left).
  ThreadCache* open_thread_cache();
  // The thread is done with its cache (it exits, or needs its place for another pool's): what the
  // cache keeps goes back to the pool, and the cache to the device's spares.
  void close_thread_cache(ThreadCache& cache);
  // Folds the credits of every thread cache of the device (every pool's) into the figures, so the
  // device's bytes in use are exact (cuMemGetInfo under a limit).
  void fold_device_caches();
  // Whether `ptr` lies inside a segment of the pool (with the pool off: is a live allocation).
  bool holds(CUdeviceptr ptr) const;
  // Whether `ptr` lies inside a segment of the pool (never, with the pool off).
  bool in_segment(CUdeviceptr ptr) const;
  // Whether `ptr` lies inside a segment of the pool but not at its start: inside a driver
  // allocation the program did not make, which the driver's view of `ptr` (its IPC handle)
  // describes instead of the program's block.
  bool holds_inside_segment(CUdeviceptr ptr) const;

  // Stream tracking, called by the hooks: after a stream is created (`flags` as given to the
  // driver), before a stream is destroyed (its queued work still runs afterwards), and when a
  // stream exists that the pool cannot record events on.
  void on_stream_created(CUstream stream, unsigned flags);
  void on_stream_destroyed(CUstream stream);
  void on_unfenceable_stream();
  // The device's other live contexts, whenever they change: their streams reach the pool's
  // memory, so while there are any, freed blocks wait for a synchronize of every context.
  void set_other_contexts(std::vector<CUcontext> contexts);
  // Whether another device has a live context (its streams reach the pool's memory unordered).
  void set_other_devices(bool other_devices);
  // Called when no capture runs any more: makes the synchronize a new stream asked for during one.
  void after_captures_end();

  // Fences what was freed and completes the fences that are done, without blocking: called before
  // a stream capture begins, during which the pool may issue no fence. The calling thread's
  // current context must be the pool's.
  void ready_freed_blocks();

  // Completes every fence, hands back every segment with no live block and trims the device's
  // stream-ordered pools; nothing while a capture is active (the caller tries again once it
  // ended). Safe while other threads allocate; makes the context current itself.
  FlushResult flush();
  // Like flush, but keeps segments while the pool's free bytes are at most `keep_cached_bytes`, and
  // leaves the stream-ordered pools alone. Returns the bytes handed back.
  uint64_t trim(uint64_t keep_cached_bytes);
  // The driver refused memory that the pool's cache could make room for (another context's pool,
  // memory the pool does not serve): completes its fences and hands back every free segment, at
  // once or not at all (nothing while a capture runs). Returns the bytes handed back.
  uint64_t release_for_out_of_memory();
  // Called periodically by the control thread: after options.idle_release with no allocation, hands
  // back every segment whose fences have completed (never blocks). Returns the bytes handed back.
  uint64_t release_if_idle(std::chrono::steady_clock::time_point now);
  // Called periodically by the control thread with VRAMSHIM_MAX_CACHED: fences what was freed
  // since the last allocation and hands back free segments over the cap (never blocks). Returns
  // the bytes handed back.
  uint64_t enforce_max_cached();
  // Context teardown: frees every segment with no live block, destroys the pool's events and
  // forgets the rest (the driver frees live blocks with the context). The pool is empty and usable
  // afterwards.
  void drop();

  void set_limit(std::optional<uint64_t> limit) { limit_.set(limit); }
  // Free plus pending bytes, the thread caches' included: what cuMemGetInfo may count as free.
  uint64_t reclaimable_bytes();
  // Every segment with its blocks, and the free space (the thread caches drained first).
  PoolPicture picture();
  PoolStats stats();

 private:
  using Lock = std::unique_lock<support::AdaptiveMutex>;

  struct Fence {
    std::vector<Block*> blocks;
    uint64_t bytes = 0;
    std::vector<CUevent> events;
    bool needs_context_sync = false;
  };

  // Held by the one thread doing fence work; waits (blocking) or tries for the claim.
  class FenceClaim {
   public:
    FenceClaim(CachingPool& pool, Lock& lock, bool wait);
    ~FenceClaim();
    bool held() const { return held_; }

   private:
    CachingPool& pool_;
    bool held_;
  };

  CUresult allocate_unpooled(size_t bytes, CUdeviceptr* ptr, uint64_t request);
  // The locked path of allocate() once the request is rounded and checked.
  CUresult allocate_locked(size_t rounded, CUdeviceptr* ptr, uint64_t request,
                           OutOfMemoryCause* cause, ThreadCache* cache);
  // Requires mutex_; `cache` (optional): the calling thread's, whose ledger's credit pays for the
  // allocation when it can (else the tagger's figures are charged, and the ledger made ready for
  // the free). `block` (optional): the block at `ptr`, whose last_use_locked mark says whether the
  // address's previous use was told under this lock, and is set when this one is.
  uint32_t tag(uint64_t request, uint64_t size, CUdeviceptr ptr, Block* block, ThreadCache* cache);
  void untag(uint32_t tag, uint64_t size, CUdeviceptr ptr, Block* block);  // requires mutex_
  // A block goes into a thread cache's keeping (requires mutex_): the cache tells the attribution
  // of its uses without this lock.
  static void hold(Block* block, uint16_t holder);
  FreeResult free_unpooled(CUdeviceptr ptr, Lock& lock);
  // Fence completion and bounded waits, for a request the free sets could not serve.
  Block* take_after_fences(size_t rounded, Fit fit, Lock& lock);
  // Last resort before out of memory: synchronize, reuse, release everything free, retry.
  CUresult allocate_after_oom(size_t rounded, size_t segment_size, Fit fit, Lock& lock,
                              Block** block);
  void release_cache_before_new_peak(size_t rounded, size_t segment_size, Lock& lock);
  CUresult grow(size_t segment_size, size_t rounded, Lock& lock, Block** block);
  void give_back(Block* block);
  // The figures' side of an allocation, under the lock: false (nothing charged) when the device's
  // limit refuses it even with the thread caches' credits folded back.
  bool charge(size_t rounded);

  // A block the program freed: pending until the next fence completes, then free, or ready in the
  // thread cache numbered `home` (0: none). Requires mutex_.
  void add_unfenced(Block* block, uint16_t home = 0);

  // Thread caches. The fast paths take only the cache's lock; false: the locked path must serve.
  bool allocate_from_cache(ThreadCache& cache, size_t rounded, uint64_t request, CUdeviceptr* ptr);
  bool free_to_cache(ThreadCache& cache, CUdeviceptr ptr);
  // The locked free of a block the pool took back (retired), by a thread whose cache has a bin for
  // its size: false when the cache does not take it.
  bool free_locked_to_cache(ThreadCache& cache, Block* block);
  // The rest require mutex_. On the calling thread's own cache (which it may touch without the
  // cache's lock): its freed blocks join the pool's unfenced ones, to come back to it once fenced;
  void take_pending_from(ThreadCache& cache);
  // or become ready in it after one legacy-stream marker (the legacy-ordered mode, outside a
  // capture): no fence to keep, no store. false: not now.
  bool ready_own_freed_blocks(ThreadCache& cache, Lock& lock);
  // `block` (small) goes to the program through `cache`, which takes its free back without the
  // lock.
  void hand_out_through(ThreadCache& cache, Block* block, uint64_t request, uint32_t tag);
  // A block a cache handed out becomes the pool's allocated block, with what the cache kept of it.
  static void become_allocated(const ThreadCache::Handed& handed);
  void refill(ThreadCache& cache, size_t rounded);
  // Any cache of the device (these take the cache's lock):
  void settle_owed(const ThreadCache::Owed& owed);
  void fold(ThreadCache& cache);
  void fold_caches();  // this pool's
  void fold_caches_of_device();
  // Everything back to the pool: the blocks it handed out become the pool's allocated ones, its
  // ready blocks free ones, the ones freed to it unfenced ones; its credit is folded back.
  void drain(ThreadCache& cache);
  void drain_caches();         // this pool's
  uint64_t bytes_in_caches();  // ready and freed blocks in this pool's caches
  // A held block a thread cache handed out becomes the pool's allocated block again (for a free its
  // cache cannot take, or made by another thread); one ready or freed there stays held.
  void reclaim_handed(Block& block);
  // The cache of this pool a pending block goes back to (Block::holder), or null.
  ThreadCache* home_of(const Block& block);

  // Fence work; the caller holds the fence claim and the lock (dropped around driver calls).
  // Completes what is done, fences what was freed since, completes what that made ready.
  void fence_what_was_freed(Lock& lock);
  // For the control thread: with the context made current and the claim if no one holds it (else
  // returns 0), fences what was freed, then calls release(lock) and returns what it released.
  template <typename Release>
  uint64_t fence_and_release_without_waiting(Release&& release);
  void issue_fence(Lock& lock);
  // The blocks freed since the last fence, as a new fence (counted), for the caller to issue.
  std::unique_ptr<Fence> fence_unfenced();
  // Records `event` (a spare one, or a new one) on `stream`; false when the driver refused.
  bool record(CUstream stream, Lock& lock, CUevent* event);
  void poll_fences(Lock& lock);
  void poll_draining(Lock& lock);
  bool wait_oldest_fence(Lock& lock);
  bool synchronize_and_complete_all(Lock& lock);
  void complete_front_fence();
  // The fence's blocks become free (or ready in their thread caches); its emptied list then takes
  // the next frees (reuse_for_unfenced).
  void make_fenced_blocks_free(Fence& fence);
  // A block list a fence is done with becomes the list of the next frees while that is empty.
  // Requires mutex_.
  void reuse_for_unfenced(std::vector<Block*>& blocks);

  // Called with the lock after a stream the legacy stream does not order appeared (`stream`: a
  // non-blocking stream just created; nullptr: streams the pool cannot name): switches the mode
  // and makes sure no block already handed out can race with work queued before now.
  void after_new_stream(Lock& lock, CUstream stream = nullptr);
  // Whether last_marker_ has completed (asked of the driver with the lock down): then so has the
  // work that last used each block a marker alone made reusable, all freed before it.
  bool last_marker_done(Lock& lock);
  // Makes `marker`, just recorded on the legacy stream in the legacy-ordered mode, the last one.
  void note_marker(CUevent marker);
  // Within a capture (no synchronize allowed): every block freed so far, the unfenced ones and
  // those of fences under way, waits for a context synchronize, made once the captures end.
  void hold_pending_for_a_synchronize();
  void move_free_blocks_to_pending();
  uint64_t pending_bound() const;
  uint64_t release_over_max_cached(Lock& lock);
  // Completes every fence and hands back free segments while more than `keep_cached_bytes` are
  // free (nothing while a capture runs), adding what it handed back to the figure `released_by`.
  uint64_t release_free_segments(uint64_t keep_cached_bytes, uint64_t PoolStats::*released_by);
  // Hands detached segments back to the driver with the lock dropped; returns the bytes freed.
  // Those a capture begun meanwhile keeps from being freed (the free would invalidate it) come
  // back into the store as free segments, unless `context_ending` (the driver frees them with it).
  uint64_t release_segments(const std::vector<Segment>& segments, Lock& lock,
                            bool context_ending = false);
  // For a flush or a trim (the claim held): every fence completed by a context synchronize, and
  // every block the thread caches keep back in the pool, before and after (completing a fence
  // sends blocks back to their caches).
  void complete_every_fence(Lock& lock);
  // The pool's bytes reserved changed (or may have): its peak, and the device's figure and peak.
  void note_reserved();

  DeviceApi& api_;
  const PoolOptions options_;
  DeviceLimit& limit_;
  const CaptureState& capture_;
  AllocationTagger* const tagger_;
  const int device_;
  DeviceCaches* const caches_;

  support::AdaptiveMutex& mutex_;
  BlockStore store_;
  StreamSet streams_;
  ReuseMode mode_ = ReuseMode::kLegacyOrdered;
  // A new stream asked for a synchronize while a capture ran (after_new_stream): it is made when
  // the captures end. Until then the blocks handed out before the stream may meet, on it, work
  // queued before their free: a capture forbids the synchronize. (A new non-blocking stream the
  // pool is told of waits for last_marker_ instead.)
  bool synchronize_owed_ = false;
  // The latest marker recorded on the legacy stream in the legacy-ordered mode, which follows the
  // frees of every block such markers made reusable. Kept out of spare_events_, so that no later
  // record, on another stream, moves it.
  CUevent last_marker_ = nullptr;
  // Since the last synchronize, blocks were made reusable by a legacy marker alone, which orders
  // them for blocking streams only.
  bool marker_reuse_ = false;
  // Events recorded on streams just before their destruction, not yet complete: work queued there
  // still runs and may touch blocks freed later.
  std::vector<CUevent> draining_;

  std::vector<Block*> unfenced_;  // freed since the last fence was issued
  uint64_t unfenced_bytes_ = 0;
  uint64_t pending_bytes_ = 0;                 // unfenced plus fenced, not yet reusable
  std::deque<std::unique_ptr<Fence>> fences_;  // oldest first; only the claim holder touches it
  // Completed events to record again. Many destroyed streams leave one each: past kMaxSpareEvents
  // more than a fence records (one per non-blocking stream, and the legacy stream's), record()
  // gives the rest back to the driver.
  static constexpr size_t kMaxSpareEvents = 64;
  std::vector<CUevent> spare_events_;
  bool fence_claimed_ = false;
  int fence_waiters_ = 0;  // threads waiting for the claim
  std::condition_variable_any fence_released_;
  // Threads handing segments back to the driver with the lock dropped (release_segments).
  int releasing_ = 0;
  std::condition_variable_any releases_done_;

  struct Unpooled {
    size_t rounded;
    uint32_t tag;
  };
  std::unordered_map<CUdeviceptr, Unpooled> unpooled_;  // live allocations while the pool is off
  uint64_t unpooled_bytes_ = 0;

  uint64_t in_use_bytes_ = 0;
  uint64_t reserved_told_ = 0;  // the bytes reserved the device's figure counts for this pool
  uint64_t allocation_count_ = 0;
  uint64_t idle_seen_count_ = 0;
  std::optional<std::chrono::steady_clock::time_point> idle_since_;
  PoolStats counters_;  // the cumulative figures and peaks; the current ones are computed
};

}  // namespace vramshim::pool
