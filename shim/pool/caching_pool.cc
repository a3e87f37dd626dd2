#include "shim/pool/caching_pool.h"

#include <algorithm>
#include <stdexcept>

#include "shim/support/deferred_cancellation.h"

namespace vramshim::pool {

namespace {

constexpr uint64_t kMinPendingBound = uint64_t{64} << 20;
// A thread cache that gives back at least this many freed blocks at once, and needs one of their
// size, gets them back after a legacy-stream marker (one driver call) rather than from the store.
constexpr size_t kBlocksWorthAMarker = ThreadCache::kBinDepth / 2;

}  // namespace

CachingPool::FenceClaim::FenceClaim(CachingPool& pool, Lock& lock, bool wait)
    : pool_(pool), held_(false) {
  if (wait && pool_.fence_claimed_) {
    ++pool_.fence_waiters_;
    // The wait is a cancellation point: the waiter would stay counted.
    const support::DeferredCancellation deferred;
    pool_.fence_released_.wait(lock, [this] { return !pool_.fence_claimed_; });
    --pool_.fence_waiters_;
  }
  if (pool_.fence_claimed_) return;
  pool_.fence_claimed_ = true;
  held_ = true;
}

// The lock is held again whenever a claim goes out of scope.
CachingPool::FenceClaim::~FenceClaim() {
  if (!held_) return;
  pool_.fence_claimed_ = false;
  // Most claims are released with no one waiting (every allocation that waits for a legacy-stream
  // marker takes one), and notifying a condition_variable_any takes a lock of its own.
  if (pool_.fence_waiters_ > 0) pool_.fence_released_.notify_all();
}

CachingPool::CachingPool(DeviceApi& api, const PoolOptions& options, DeviceLimit& limit,
                         const CaptureState& capture, AllocationTagger* tagger, int device,
                         DeviceCaches* caches)
    : api_(api),
      options_(options),
      limit_(limit),
      capture_(capture),
      tagger_(tagger),
      device_(device),
      caches_(options.enabled && options.thread_caches ? caches : nullptr),
      mutex_(limit.device_lock()),
      store_(SizePolicy(options.split_blocks)) {
  // The tagger's figures and the device's charges are both changed under the pool's one lock.
  if (tagger != nullptr && &tagger->figures_lock(device) != &mutex_) {
    throw std::invalid_argument("a tagged pool's device limit must be guarded by the figures lock");
  }
}

CachingPool::~CachingPool() = default;

namespace {

// Whose use of `block`'s address the attribution was last told of, for a use told under the
// pool's lock now, which it marks as such.
LastUse last_use_then_lock(Block* block) {
  if (block == nullptr) return LastUse::kAnyThread;
  const LastUse last_use = block->last_use_locked ? LastUse::kThisLock : LastUse::kAnyThread;
  block->last_use_locked = true;
  return last_use;
}

}  // namespace

inline uint32_t CachingPool::tag(uint64_t request, uint64_t size, CUdeviceptr ptr, Block* block,
                                 ThreadCache* cache) {
  if (tagger_ == nullptr || request == 0) return 0;
  AllocationLedger* ledger = cache != nullptr ? cache->ledger() : nullptr;
  // The calling thread's own cache: its ledger may be used under the device lock alone.
  uint32_t from_credit = 0;
  if (ledger != nullptr && tagger_->tag_from_credit(*ledger, device_, request, size, ptr,
                                                    LastUse::kAnyThread, &from_credit)) {
    if (block != nullptr) block->last_use_locked = false;
    return from_credit;
  }
  return tagger_->tag(device_, request, size, ptr, last_use_then_lock(block), ledger);
}

void CachingPool::untag(uint32_t tag, uint64_t size, CUdeviceptr ptr, Block* block) {
  if (tag != 0) tagger_->untag(device_, tag, size, ptr, last_use_then_lock(block));
}

void CachingPool::hold(Block* block, uint16_t holder) {
  block->state = BlockState::kHeld;
  block->holder = holder;
  block->last_use_locked = false;
}

CUresult CachingPool::allocate(size_t bytes, CUdeviceptr* ptr, uint64_t request,
                               OutOfMemoryCause* cause, ThreadCache* cache) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!options_.enabled) {
    const CUresult result = allocate_unpooled(bytes, ptr, request);
    if (result == CUDA_ERROR_OUT_OF_MEMORY && cause != nullptr) {
      *cause = limit_.would_fit(SizePolicy::round(bytes)) ? OutOfMemoryCause::kDriver
                                                          : OutOfMemoryCause::kLimit;
    }
    return result;
  }
  if (bytes > SizePolicy::kMaxRequest) {
    if (cause != nullptr) *cause = OutOfMemoryCause::kTooLarge;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const size_t rounded = SizePolicy::round(bytes);
  // may_serve() first: a call the cache cannot serve takes neither its lock nor a call.
  if (cache != nullptr && cache->may_serve(rounded) &&
      allocate_from_cache(*cache, rounded, request, ptr)) {
    return CUDA_SUCCESS;
  }
  return allocate_locked(rounded, ptr, request, cause, cache);
}

CUresult CachingPool::allocate_locked(size_t rounded, CUdeviceptr* ptr, uint64_t request,
                                      OutOfMemoryCause* cause, ThreadCache* cache) {
  auto fail = [cause](OutOfMemoryCause why) {
    if (cause != nullptr) *cause = why;
    return CUDA_ERROR_OUT_OF_MEMORY;
  };
  Lock lock(mutex_);
  if (cache != nullptr) cache->locked_call();
  if (!limit_.would_fit(rounded)) {
    fold_caches_of_device();  // the credits folded back may make room
    if (!limit_.would_fit(rounded)) return fail(OutOfMemoryCause::kLimit);
  }
  ++allocation_count_;
  // A size goes through the thread's cache from its second request on (ThreadCache::claim_bin).
  const bool through_cache =
      cache != nullptr && store_.policy().is_small(rounded) && cache->bin_is_for(rounded);
  // A cache's bins hold blocks of their size alone; the pool's own may be a little larger.
  const Fit fit = through_cache ? Fit::kExact : Fit::kSlack;
  Block* block = nullptr;
  if (cache != nullptr) {
    // The blocks it pushed out of its slots become the pool's; its slots all have room again.
    cache->give_up_evicted([](const ThreadCache::Handed& handed) { become_allocated(handed); });
    if (store_.policy().is_small(rounded)) cache->claim_bin(rounded);
    if (through_cache && (block = cache->take_ready(rounded)) == nullptr) {
      cache->found_empty(rounded);
      const bool worth_a_marker = cache->pending_count() >= kBlocksWorthAMarker ||
                                  cache->pending_bytes() >= ThreadCache::kBinBytes;
      if (worth_a_marker && ready_own_freed_blocks(*cache, lock)) {
        block = cache->take_ready(rounded);
      }
    }
  }
  // While blocks wait for a legacy-stream marker (a driver call), a small request takes any free
  // block at once: small blocks share 2 MiB segments, where carving a free remainder costs little.
  // A large request takes only an exact fit at once; otherwise best fit over the coalesced free
  // blocks after the marker packs better. (Within a capture no marker can be recorded.)
  const bool markable =
      mode_ == ReuseMode::kLegacyOrdered && !unfenced_.empty() && !capture_.active();
  if (block == nullptr) {
    block = markable && !store_.policy().is_small(rounded) ? store_.take_exact(rounded)
                                                           : store_.take(rounded, fit);
  }
  if (block == nullptr && !capture_.active()) {
    // The pool fences rather than grows, and the blocks freed to the thread's cache are fenced
    // with the rest.
    if (cache != nullptr) take_pending_from(*cache);
    block = take_after_fences(rounded, fit, lock);
  }
  if (block != nullptr) {
    ++counters_.pool_hits;
  } else {
    const size_t segment_size = store_.policy().segment_size(rounded);
    release_cache_before_new_peak(rounded, segment_size, lock);
    CUresult result = grow(segment_size, rounded, lock, &block);
    if (result == CUDA_ERROR_OUT_OF_MEMORY && !capture_.active()) {
      result = allocate_after_oom(rounded, segment_size, fit, lock, &block);
    } else if (result == CUDA_ERROR_OUT_OF_MEMORY && segment_size > rounded) {
      // A capture forbids the synchronize and the frees of the full retry, not this one.
      result = grow(rounded, rounded, lock, &block);
    }
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return fail(OutOfMemoryCause::kDriver);
    if (result != CUDA_SUCCESS) return result;
  }

  // The thread's credit pays for it when it can, as without the lock; else it is charged here.
  if (cache != nullptr && cache->credit() >= rounded && limit_.within_cap()) {
    cache->spend(rounded);
  } else if (!charge(rounded)) {
    give_back(block);
    return fail(OutOfMemoryCause::kLimit);
  }
  const uint32_t block_tag =
      tag(request, rounded, block->ptr, block, through_cache ? cache : nullptr);
  if (through_cache) {
    hand_out_through(*cache, block, block_tag != 0 ? request : 0, block_tag);
    refill(*cache, rounded);
  } else {
    block->requested = rounded;
    block->tag = block_tag;
  }
  *ptr = block->ptr;
  return CUDA_SUCCESS;
}

inline bool CachingPool::charge(size_t rounded) {
  if (!limit_.try_charge(rounded)) {
    fold_caches_of_device();
    if (!limit_.try_charge(rounded)) return false;
  }
  // A new peak, the device's or the pool's, is made only with every credit folded back, so it is
  // the true one.
  if (limit_.above_peak_in_use()) {
    fold_caches_of_device();
    limit_.note_peak_in_use();
  } else if (caches_ != nullptr && in_use_bytes_ + rounded > counters_.peak_in_use_bytes) {
    fold_caches();
  }
  in_use_bytes_ += rounded;
  counters_.peak_in_use_bytes = std::max(counters_.peak_in_use_bytes, in_use_bytes_);
  return true;
}

Block* CachingPool::take_after_fences(size_t rounded, Fit fit, Lock& lock) {
  if (pending_bytes_ == 0) return nullptr;
  Block* block = nullptr;
  {
    // A legacy-stream marker is one quick driver call, so wait for the thread recording one rather
    // than grow; past the pending bound this thread must make progress on fences too.
    const bool wait = mode_ == ReuseMode::kLegacyOrdered || pending_bytes_ > pending_bound();
    FenceClaim claim(*this, lock, wait);
    if (!claim.held()) return nullptr;
    poll_fences(lock);
    if (mode_ != ReuseMode::kLegacyOrdered && (block = store_.take(rounded, fit)) != nullptr) {
      return block;
    }
    issue_fence(lock);
    poll_fences(lock);
    if ((block = store_.take(rounded, fit)) != nullptr) return block;
    if (mode_ == ReuseMode::kContextSynchronize && pending_bytes_ >= rounded &&
        synchronize_and_complete_all(lock) && (block = store_.take(rounded, fit)) != nullptr) {
      return block;
    }
    while (pending_bytes_ > pending_bound() && wait_oldest_fence(lock)) {
      if ((block = store_.take(rounded, fit)) != nullptr) return block;
    }
  }
  release_over_max_cached(lock);
  return nullptr;
}

CUresult CachingPool::grow(size_t segment_size, size_t rounded, Lock& lock, Block** block) {
  CUdeviceptr base = 0;
  lock.unlock();
  const CUresult result = api_.allocate(segment_size, &base);
  lock.lock();
  ++counters_.driver_alloc_calls;
  if (result != CUDA_SUCCESS) return result;
  ++counters_.pool_misses;
  try {
    *block = store_.add_segment_and_take(base, segment_size, rounded);
  } catch (...) {
    // Out of host memory while recording it: the segment goes back rather than stay leaked (the
    // exception stops the pool on its way out of the hook).
    lock.unlock();
    api_.free(base);
    lock.lock();
    throw;
  }
  note_reserved();
  return CUDA_SUCCESS;
}

CUresult CachingPool::allocate_after_oom(size_t rounded, size_t segment_size, Fit fit, Lock& lock,
                                         Block** block) {
  {
    FenceClaim claim(*this, lock, /*wait=*/true);
    drain_caches();
    if (pending_bytes_ > 0 && synchronize_and_complete_all(lock) &&
        (*block = store_.take(rounded, fit)) != nullptr) {
      ++counters_.pool_hits;
      return CUDA_SUCCESS;
    }
    drain_caches();  // what completing the fences sent back to them
    counters_.released_by_oom_bytes += release_segments(store_.detach_free_segments(0), lock);
  }
  CUresult result = grow(segment_size, rounded, lock, block);
  // A segment larger than the request may be what the driver cannot find room for.
  if (result == CUDA_ERROR_OUT_OF_MEMORY && segment_size > rounded) {
    result = grow(rounded, rounded, lock, block);
  }
  return result;
}

void CachingPool::release_cache_before_new_peak(size_t rounded, size_t segment_size, Lock& lock) {
  // Free bytes that cannot serve the request are fragments. While the program climbs to a new
  // high-water mark, hand wholly free segments back before growing, so reserved memory follows what
  // is in use instead of stacking up the fragments of the first steps. Once the workload repeats
  // below its peak this never fires, so the cache does not churn.
  if (capture_.active() || store_.free_bytes() < rounded) return;
  fold_caches();  // the bytes in use, exact
  if (in_use_bytes_ + rounded <= counters_.peak_in_use_bytes) return;
  if (store_.reserved_bytes() + segment_size <= counters_.peak_reserved_bytes) return;
  release_segments(store_.detach_free_segments(0), lock);
}

void CachingPool::give_back(Block* block) {
  // The program never had it: free again at once, no fence needed.
  block->holder = 0;
  store_.make_free(block);
}

FreeResult CachingPool::free(CUdeviceptr ptr, ThreadCache* cache) {
  if (cache != nullptr && cache->may_take_back(ptr) && free_to_cache(*cache, ptr)) {
    return {true, CUDA_SUCCESS};
  }
  Lock lock(mutex_);
  if (cache != nullptr) cache->locked_call();
  if (!options_.enabled) return free_unpooled(ptr, lock);
  Block* block = store_.retire(ptr);
  if (block == nullptr && caches_ != nullptr) {
    // Handed out by a thread cache: the pool's allocated block once reclaimed. (Retiring it is
    // left to what follows: a free to this thread's cache, or add_unfenced, sets its state.)
    Block* held = store_.find(ptr);
    if (held != nullptr && held->state == BlockState::kHeld) {
      reclaim_handed(*held);
      if (held->state == BlockState::kAllocated) block = held;
    }
  }
  if (block == nullptr) {
    if (store_.holds(ptr)) return {true, CUDA_ERROR_INVALID_VALUE};
    return {false, CUDA_SUCCESS};
  }
  if (cache != nullptr && cache->bin_is_for(block->requested) &&
      free_locked_to_cache(*cache, block)) {
    return {true, CUDA_SUCCESS};
  }
  const size_t requested = block->requested;
  in_use_bytes_ -= requested;
  limit_.uncharge(requested);
  untag(block->tag, requested, ptr, block);
  block->tag = 0;
  // Work queued before the free may still use the block, on any stream: it waits for a fence.
  add_unfenced(block);
  release_over_max_cached(lock);
  return {true, CUDA_SUCCESS};
}

void CachingPool::add_unfenced(Block* block, uint16_t home) {
  block->state = BlockState::kPending;
  block->holder = home;
  unfenced_.push_back(block);
  unfenced_bytes_ += block->size;
  pending_bytes_ += block->size;
}

bool CachingPool::allocate_from_cache(ThreadCache& cache, size_t rounded, uint64_t request,
                                      CUdeviceptr* ptr) {
  // A cap lowered below what is in use: every allocation goes by the lock and is refused there.
  if (!limit_.within_cap()) return false;
  std::lock_guard<support::AdaptiveMutex> guard(cache.lock());
  const ThreadCache::Ready* ready = cache.peek_ready(rounded);
  if (ready == nullptr || cache.credit() < rounded || !cache.can_remember(ready->ptr)) {
    return false;
  }
  uint32_t block_tag = 0;
  if (request != 0 && tagger_ != nullptr) {
    const LastUse last_use = cache.next_use_ordered() ? LastUse::kAnyThread : LastUse::kThisThread;
    if (cache.ledger() == nullptr ||
        !tagger_->tag_from_credit(*cache.ledger(), device_, request, rounded, ready->ptr, last_use,
                                  &block_tag)) {
      return false;
    }
    cache.use_ordered();
  }
  *ptr = ready->ptr;
  cache.remember_handed(*ready, rounded, block_tag != 0 ? request : 0, block_tag);
  cache.take_ready(rounded);
  cache.spend(rounded);
  cache.count_hit();
  return true;
}

bool CachingPool::free_to_cache(ThreadCache& cache, CUdeviceptr ptr) {
  std::lock_guard<support::AdaptiveMutex> guard(cache.lock());
  const ThreadCache::Handed* handed = cache.find_handed(ptr);
  if (handed == nullptr) return false;
  Block* block = handed->block;
  const size_t size = handed->size;
  if (!cache.pending_room(size)) return false;
  // The cache handed it out, on this thread: its allocation was this thread's last use.
  if (handed->request != 0 &&
      !tagger_->untag_to_credit(*cache.ledger(), device_, handed->request, handed->tag, size, ptr,
                                LastUse::kThisThread)) {
    return false;
  }
  cache.earn(size);
  cache.forget_handed(ptr);
  // Work queued before the free may still use the block: the pool fences it with the next batch.
  cache.keep_pending({block, ptr}, size);
  return true;
}

bool CachingPool::free_locked_to_cache(ThreadCache& cache, Block* block) {
  const size_t size = block->requested;
  if (size != block->size) return false;
  // Full: what it holds goes to the pool's fences, and comes back to it from there.
  if (!cache.pending_room(size)) take_pending_from(cache);
  // As free_to_cache does, with the lock: credit rather than figures, so that the thread's next
  // allocations go without the lock even when their blocks were the pool's.
  if (block->tag != 0) {
    if (cache.ledger() == nullptr ||
        !tagger_->untag_to_credit(*cache.ledger(), device_, 0, block->tag, size, block->ptr,
                                  LastUse::kAnyThread)) {
      untag(block->tag, size, block->ptr, block);
    }
  }
  cache.earn(size);
  hold(block, cache.number());
  cache.keep_pending({block, block->ptr}, size);
  return true;
}

ThreadCache* CachingPool::open_thread_cache() {
  if (caches_ == nullptr) return nullptr;
  Lock lock(mutex_);
  ThreadCache* cache = caches_->claim(this, nullptr);
  if (cache == nullptr) return nullptr;
  // Without a ledger (out of host memory) the cache still serves, attributed allocations by the
  // lock.
  if (tagger_ != nullptr) cache->assign(this, tagger_->open_ledger(device_, cache->lock()));
  return cache;
}

void CachingPool::close_thread_cache(ThreadCache& cache) {
  Lock lock(mutex_);
  drain(cache);
  if (tagger_ != nullptr && cache.ledger() != nullptr) {
    tagger_->close_ledger(device_, *cache.ledger());
  }
  caches_->release(cache);
}

void CachingPool::fold_device_caches() {
  Lock lock(mutex_);
  fold_caches_of_device();
}

void CachingPool::take_pending_from(ThreadCache& cache) {
  cache.give_up_pending([this, &cache](Block* block) { add_unfenced(block, cache.number()); });
}

bool CachingPool::ready_own_freed_blocks(ThreadCache& cache, Lock& lock) {
  // Only in the legacy-ordered mode is a marker a fence that completes at once. The fence claim
  // keeps a stream from being destroyed while the marker is recorded (the legacy stream would no
  // longer wait for its work); when another thread holds it, the blocks go to the pool's fences.
  if (mode_ != ReuseMode::kLegacyOrdered || capture_.active()) return false;
  FenceClaim claim(*this, lock, /*wait=*/false);
  if (!claim.held()) return false;
  CUevent marker = nullptr;
  if (!record(CU_STREAM_LEGACY, lock, &marker)) return false;
  note_marker(marker);
  ++counters_.fences_issued;
  // A stream made meanwhile drained the cache (and the mode is stricter now): nothing left here.
  cache.ready_pending([this, &cache](Block* block) { add_unfenced(block, cache.number()); });
  return true;
}

void CachingPool::hand_out_through(ThreadCache& cache, Block* block, uint64_t request,
                                   uint32_t tag) {
  hold(block, cache.number());
  // The locked path emptied the evicted blocks first: there is room.
  cache.remember_handed({block, block->ptr}, block->size, request, tag);
}

void CachingPool::become_allocated(const ThreadCache::Handed& handed) {
  Block* block = handed.block;
  block->state = BlockState::kAllocated;
  block->holder = 0;
  block->requested = block->size;
  block->tag = handed.tag;
}

void CachingPool::refill(ThreadCache& cache, size_t rounded) {
  if (!cache.wants_refill(rounded)) return;
  // Only blocks free now: the cache never waits for, or asks for, a fence.
  for (size_t room = cache.ready_room(rounded); room > 0; --room) {
    Block* block = store_.take(rounded, Fit::kExact);
    if (block == nullptr) return;
    hold(block, cache.number());
    block->requested = 0;
    cache.keep_ready(block);
  }
}

void CachingPool::settle_owed(const ThreadCache::Owed& owed) {
  in_use_bytes_ -= owed.credit;
  limit_.uncharge(owed.credit);
  counters_.pool_hits += owed.hits;
  allocation_count_ += owed.hits;
}

void CachingPool::fold(ThreadCache& cache) {
  if (!cache.owes()) return;
  ThreadCache::Owed owed;
  {
    std::lock_guard<support::AdaptiveMutex> guard(cache.lock());
    owed = cache.take_owed();
  }
  settle_owed(owed);
}

void CachingPool::fold_caches() {
  if (caches_ != nullptr) caches_->for_each(this, [this](ThreadCache& cache) { fold(cache); });
}

void CachingPool::fold_caches_of_device() {
  if (caches_ == nullptr) return;
  caches_->for_each(nullptr, [](ThreadCache& cache) { cache.pool()->fold(cache); });
}

void CachingPool::drain(ThreadCache& cache) {
  std::lock_guard<support::AdaptiveMutex> guard(cache.lock());
  settle_owed(cache.take_owed());
  cache.give_up_handed([](const ThreadCache::Handed& handed) { become_allocated(handed); });
  cache.give_up_ready([this](Block* block) {
    block->holder = 0;
    store_.make_free(block);
  });
  cache.give_up_pending([this, &cache](Block* block) { add_unfenced(block, cache.number()); });
}

void CachingPool::drain_caches() {
  if (caches_ != nullptr) caches_->for_each(this, [this](ThreadCache& cache) { drain(cache); });
}

ThreadCache* CachingPool::home_of(const Block& block) {
  if (block.holder == 0 || caches_ == nullptr) return nullptr;
  ThreadCache& home = caches_->at(block.holder);
  return home.pool() == this ? &home : nullptr;
}

void CachingPool::reclaim_handed(Block& block) {
  ThreadCache& holder = caches_->at(block.holder);
  std::lock_guard<support::AdaptiveMutex> guard(holder.lock());
  ThreadCache::Handed handed;
  if (holder.take_handed(block.ptr, &handed)) become_allocated(handed);
  // Otherwise it is ready or freed there: not allocated.
}

bool CachingPool::holds(CUdeviceptr ptr) const {
  Lock lock(mutex_);
  return options_.enabled ? store_.holds(ptr) : unpooled_.count(ptr) != 0;
}

bool CachingPool::in_segment(CUdeviceptr ptr) const {
  Lock lock(mutex_);
  return options_.enabled && store_.holds(ptr);
}

bool CachingPool::holds_inside_segment(CUdeviceptr ptr) const {
  Lock lock(mutex_);
  if (!options_.enabled) return false;
  const CUdeviceptr base = store_.segment_base(ptr);
  return base != 0 && base != ptr;
}

CUresult CachingPool::allocate_unpooled(size_t bytes, CUdeviceptr* ptr, uint64_t request) {
  const size_t rounded = SizePolicy::round(bytes);
  Lock lock(mutex_);
  if (!limit_.try_charge(rounded)) return CUDA_ERROR_OUT_OF_MEMORY;
  limit_.add_unanswered(static_cast<int64_t>(rounded));
  lock.unlock();
  const CUresult result = api_.allocate(bytes, ptr);
  lock.lock();
  limit_.add_unanswered(-static_cast<int64_t>(rounded));
  ++allocation_count_;
  ++counters_.driver_alloc_calls;
  if (result != CUDA_SUCCESS) {
    limit_.uncharge(rounded);
    return result;
  }
  ++counters_.pool_misses;
  decltype(unpooled_)::iterator entry;
  try {
    entry = unpooled_.emplace(*ptr, Unpooled{rounded, 0}).first;
  } catch (...) {
    // Out of host memory while recording it: the allocation goes back rather than stay leaked.
    limit_.uncharge(rounded);
    lock.unlock();
    api_.free(*ptr);
    lock.lock();
    throw;
  }
  entry->second.tag = tag(request, rounded, *ptr, nullptr, nullptr);
  unpooled_bytes_ += rounded;
  in_use_bytes_ += rounded;
  counters_.peak_in_use_bytes = std::max(counters_.peak_in_use_bytes, in_use_bytes_);
  if (limit_.above_peak_in_use()) limit_.note_peak_in_use();  // no thread caches with the pool off
  note_reserved();
  return CUDA_SUCCESS;
}

FreeResult CachingPool::free_unpooled(CUdeviceptr ptr, Lock& lock) {
  const auto it = unpooled_.find(ptr);
  if (it == unpooled_.end()) return {false, CUDA_SUCCESS};
  const size_t rounded = it->second.rounded;
  untag(it->second.tag, rounded, ptr, nullptr);
  unpooled_.erase(it);
  unpooled_bytes_ -= rounded;
  in_use_bytes_ -= rounded;
  limit_.uncharge(rounded);
  note_reserved();
  lock.unlock();
  const CUresult result = api_.free(ptr);
  lock.lock();
  ++counters_.driver_free_calls;
  return {true, result};
}

void CachingPool::on_stream_created(CUstream stream, unsigned flags) {
  Lock lock(mutex_);
  streams_.add(stream, flags);
  after_new_stream(lock, stream);
}

void CachingPool::on_stream_destroyed(CUstream stream) {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  // A fence being issued may be recording on this stream: wait until no fence work is in flight.
  FenceClaim claim(*this, lock, /*wait=*/true);
  streams_.remove(stream);
  // The driver still runs what was queued on the stream; blocks freed from now on must wait for
  // it too. Within a capture nothing may be recorded: a synchronize does instead, once, made when
  // the captures end (it waits for the stream's work; reuse needs one until then).
  CUevent event = nullptr;
  if (!capture_.active() && record(stream, lock, &event)) {
    draining_.push_back(event);
  } else if (store_.reserved_bytes() > 0) {
    streams_.mark_undrained_stream_destroyed();
    hold_pending_for_a_synchronize();
    synchronize_owed_ = true;  // the blocks freed until the captures end wait for it too
  }
  // Stricter reuse from here on is enough: blocks handed out before were fenced while the stream
  // was alive, and so against the work it had queued until then.
  mode_ = streams_.mode(!draining_.empty());
}

void CachingPool::on_unfenceable_stream() {
  // Every pool hears of it, whichever context is current (a green context made under another
  // device's): a synchronize it makes must be its own context's.
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  streams_.mark_unfenceable_stream_seen();
  after_new_stream(lock);
}

void CachingPool::set_other_contexts(std::vector<CUcontext> contexts) {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  {
    // A synchronize under way may be synchronizing a context about to be destroyed.
    FenceClaim claim(*this, lock, /*wait=*/true);
    // A context leaving (told before the driver destroys it) may still run work on blocks freed
    // since the last synchronize: one more while it is still among the others.
    const std::vector<CUcontext>& before = streams_.other_contexts();
    const bool one_leaves = std::any_of(before.begin(), before.end(), [&](CUcontext context) {
      return std::find(contexts.begin(), contexts.end(), context) == contexts.end();
    });
    if (one_leaves) {
      drain_caches();
      if (!capture_.active()) {
        if (pending_bytes_ > 0) synchronize_and_complete_all(lock);
      } else {
        hold_pending_for_a_synchronize();  // a capture forbids it now
      }
    }
    streams_.set_other_contexts(std::move(contexts));
  }
  after_new_stream(lock);
}

void CachingPool::set_other_devices(bool other_devices) {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  {
    FenceClaim claim(*this, lock, /*wait=*/true);
    streams_.set_other_devices(other_devices);
  }
  after_new_stream(lock);
}

std::unique_ptr<CachingPool::Fence> CachingPool::fence_unfenced() {
  auto fence = std::make_unique<Fence>();
  fence->blocks.swap(unfenced_);
  fence->bytes = unfenced_bytes_;
  unfenced_bytes_ = 0;
  ++counters_.fences_issued;
  return fence;
}

void CachingPool::hold_pending_for_a_synchronize() {
  if (!unfenced_.empty()) fences_.push_back(fence_unfenced());
  for (auto& fence : fences_) fence->needs_context_sync = true;
  synchronize_owed_ = !fences_.empty();  // made by after_captures_end
}

void CachingPool::after_new_stream(Lock& lock, CUstream stream) {
  // Back to (or still in) the legacy-ordered mode: nothing to wait for, nothing to fence again.
  if (streams_.mode(!draining_.empty()) == ReuseMode::kLegacyOrdered) {
    mode_ = ReuseMode::kLegacyOrdered;
    return;
  }
  // A stricter mode is set under the fence claim: a thread may be recording a legacy-stream marker
  // with the lock down, and make the blocks it frees reusable by that marker alone once it has the
  // lock back. Waiting for it, this sees those blocks (marker_reuse_) and synchronizes for them.
  FenceClaim claim(*this, lock, /*wait=*/true);
  mode_ = streams_.mode(!draining_.empty());
  if (mode_ == ReuseMode::kLegacyOrdered || !marker_reuse_) return;
  // Blocks made reusable by a legacy-stream marker alone are ordered for blocking streams only
  // (whichever mode the pool went through since). The free blocks, the thread caches' ready ones
  // too, now wait for a fence; and since blocks already handed out again may be used on the new
  // stream while work queued before their free still runs, one synchronize covers those too.
  drain_caches();
  move_free_blocks_to_pending();
  if (store_.reserved_bytes() == 0) return;
  if (!capture_.active()) {
    // Once the last marker is done, so is every earlier user of those blocks: nothing to wait
    // for (a synchronize would also wait for work queued since, which may wait for the host).
    if (!last_marker_done(lock)) synchronize_and_complete_all(lock);
    return;
  }
  // A capture forbids the synchronize. A new stream the pool can name waits for the last marker
  // instead: every block handed out so far was freed before it. Else the synchronize is owed until
  // the captures end (after_captures_end).
  if (stream != nullptr) {
    const CUevent marker = last_marker_;
    lock.unlock();
    const bool waits = marker == nullptr || api_.wait_event(stream, marker) == CUDA_SUCCESS;
    lock.lock();
    if (waits) return;
  }
  synchronize_owed_ = true;
}

bool CachingPool::last_marker_done(Lock& lock) {
  const CUevent marker = last_marker_;
  if (marker == nullptr) return false;
  // The fence claim is held: no other thread records a marker or moves this one meanwhile.
  lock.unlock();
  const bool done = api_.query_event(marker) == CUDA_SUCCESS;
  lock.lock();
  if (done) marker_reuse_ = false;
  return done;
}

void CachingPool::note_marker(CUevent marker) {
  if (last_marker_ != nullptr) spare_events_.push_back(last_marker_);
  last_marker_ = marker;
  marker_reuse_ = true;
}

void CachingPool::after_captures_end() {
  {
    Lock lock(mutex_);
    if (!synchronize_owed_) return;  // the common case: no context call at all
  }
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  if (!synchronize_owed_ || capture_.active()) return;
  FenceClaim claim(*this, lock, /*wait=*/true);
  if (capture_.active()) return;
  synchronize_owed_ = false;
  synchronize_and_complete_all(lock);
}

void CachingPool::move_free_blocks_to_pending() {
  const uint64_t bytes = store_.free_bytes();
  store_.make_all_free_pending(&unfenced_);
  unfenced_bytes_ += bytes;
  pending_bytes_ += bytes;
}

uint64_t CachingPool::pending_bound() const {
  return std::min<uint64_t>(options_.max_pending_bytes,
                            std::max<uint64_t>(kMinPendingBound, store_.reserved_bytes() / 4));
}

void CachingPool::issue_fence(Lock& lock) {
  if (unfenced_.empty()) return;
  std::unique_ptr<Fence> fence = fence_unfenced();
  const ReuseMode mode = mode_;
  if (mode == ReuseMode::kContextSynchronize) {
    fence->needs_context_sync = true;
    fences_.push_back(std::move(fence));
    return;
  }
  // The legacy stream covers every blocking stream; the non-blocking ones need events of their own.
  std::vector<CUstream> targets = {CU_STREAM_LEGACY};
  if (mode == ReuseMode::kEventFence) {
    targets.insert(targets.end(), streams_.non_blocking().begin(), streams_.non_blocking().end());
  }
  for (CUstream target : targets) {
    CUevent event = nullptr;
    if (!record(target, lock, &event)) {
      fence->needs_context_sync = true;
      break;
    }
    fence->events.push_back(event);
  }
  if (mode == ReuseMode::kLegacyOrdered && !fence->needs_context_sync) {
    // Every later use of the blocks is ordered after the marker, and so after their last users.
    note_marker(fence->events.front());
    fence->events.clear();
    make_fenced_blocks_free(*fence);
    return;
  }
  fences_.push_back(std::move(fence));
}

void CachingPool::reuse_for_unfenced(std::vector<Block*>& blocks) {
  // The next frees fill the array a fence is done with instead of growing one from nothing (eight
  // reallocations for a fence of a hundred frees), up to a bound on what is kept.
  constexpr size_t kMaxKeptCapacity = 4096;
  if (!unfenced_.empty() || blocks.capacity() > kMaxKeptCapacity) return;
  blocks.clear();
  unfenced_.swap(blocks);
}

bool CachingPool::record(CUstream stream, Lock& lock, CUevent* event) {
  CUevent chosen = nullptr;
  if (!spare_events_.empty()) {
    chosen = spare_events_.back();
    spare_events_.pop_back();
  }
  std::vector<CUevent> surplus;
  const size_t kept = kMaxSpareEvents + streams_.non_blocking().size() + 1;
  if (spare_events_.size() > kept) {
    surplus.assign(spare_events_.begin() + kept, spare_events_.end());
    spare_events_.resize(kept);
  }
  lock.unlock();
  for (CUevent spare : surplus) api_.destroy_event(spare);
  bool recorded = chosen != nullptr || api_.create_event(&chosen) == CUDA_SUCCESS;
  recorded = recorded && api_.record_event(chosen, stream) == CUDA_SUCCESS;
  lock.lock();
  if (!recorded) {
    if (chosen != nullptr) spare_events_.push_back(chosen);
    return false;
  }
  *event = chosen;
  return true;
}

void CachingPool::poll_draining(Lock& lock) {
  if (draining_.empty()) return;
  // Only the claim holder changes draining_, so the copy stays valid while unlocked.
  const std::vector<CUevent> draining = draining_;
  std::vector<CUevent> done;
  done.reserve(draining.size());  // nothing allocates while unlocked and holding the fence claim
  lock.unlock();
  for (CUevent event : draining) {
    if (api_.query_event(event) == CUDA_SUCCESS) done.push_back(event);
  }
  lock.lock();
  // draining_ is still `draining`, and `done` a subsequence of it: one pass keeps the others.
  size_t kept = 0;
  for (size_t i = 0, next_done = 0; i < draining.size(); ++i) {
    if (next_done < done.size() && draining[i] == done[next_done]) {
      ++next_done;
    } else {
      draining_[kept++] = draining[i];
    }
  }
  draining_.resize(kept);
  spare_events_.insert(spare_events_.end(), done.begin(), done.end());
  if (draining_.empty()) mode_ = streams_.mode(false);
}

void CachingPool::poll_fences(Lock& lock) {
  poll_draining(lock);
  while (!fences_.empty() && !fences_.front()->needs_context_sync) {
    const Fence& fence = *fences_.front();
    lock.unlock();
    bool ready = true;
    for (CUevent event : fence.events) {
      if (api_.query_event(event) != CUDA_SUCCESS) {
        ready = false;
        break;
      }
    }
    lock.lock();
    // Work still queued on a destroyed stream may touch the fenced blocks too.
    if (!ready || !draining_.empty()) return;
    complete_front_fence();
  }
}

bool CachingPool::wait_oldest_fence(Lock& lock) {
  if (fences_.empty()) return false;
  Fence& fence = *fences_.front();
  if (fence.needs_context_sync || !draining_.empty()) return synchronize_and_complete_all(lock);
  lock.unlock();
  bool completed = true;
  for (CUevent event : fence.events) {
    if (api_.synchronize_event(event) != CUDA_SUCCESS) {
      completed = false;
      break;
    }
  }
  lock.lock();
  ++counters_.synchronizations;
  if (completed) {
    complete_front_fence();
  } else {
    fence.needs_context_sync = true;  // the next wait synchronizes the context instead
  }
  return true;
}

bool CachingPool::synchronize_and_complete_all(Lock& lock) {
  if (!unfenced_.empty()) {
    fences_.push_back(fence_unfenced());
    fences_.back()->needs_context_sync = true;
  }
  // Everything freed before the synchronize is covered; later frees wait for the next fence.
  const size_t covered = fences_.size();
  // The claim holder's copy: the list changes only under the claim.
  const std::vector<CUcontext> others = streams_.other_contexts();
  lock.unlock();
  CUresult result = api_.synchronize_context();
  for (size_t i = 0; i < others.size() && result == CUDA_SUCCESS; ++i) {
    result = api_.synchronize_other_context(others[i]);
  }
  lock.lock();
  ++counters_.synchronizations;
  if (result != CUDA_SUCCESS) return false;
  // The synchronize also waited for the destroyed streams that were draining, and for the last
  // users of every block handed out so far.
  spare_events_.insert(spare_events_.end(), draining_.begin(), draining_.end());
  draining_.clear();
  streams_.after_synchronize();
  marker_reuse_ = false;
  mode_ = streams_.mode(false);
  for (size_t i = 0; i < covered; ++i) complete_front_fence();
  return true;
}

void CachingPool::complete_front_fence() {
  std::unique_ptr<Fence> fence = std::move(fences_.front());
  fences_.pop_front();
  make_fenced_blocks_free(*fence);
}

void CachingPool::make_fenced_blocks_free(Fence& fence) {
  // A block freed through a thread cache goes back to it while it has room for its size (its
  // owner may be in its fast path: its lock is held, a run of blocks at a time); else to the store.
  ThreadCache* locked = nullptr;
  std::unique_lock<support::AdaptiveMutex> home_lock;  // released however this ends
  for (Block* block : fence.blocks) {
    ThreadCache* home = home_of(*block);
    if (home != locked) {
      home_lock = home != nullptr ? std::unique_lock<support::AdaptiveMutex>(home->lock())
                                  : std::unique_lock<support::AdaptiveMutex>();
      locked = home;
    }
    if (home != nullptr && home->ready_room(block->size) > 0) {
      hold(block, home->number());
      home->keep_ready(block);
    } else {
      block->holder = 0;
      store_.make_free(block);
    }
  }
  home_lock = {};
  pending_bytes_ -= fence.bytes;
  spare_events_.insert(spare_events_.end(), fence.events.begin(), fence.events.end());
  reuse_for_unfenced(fence.blocks);
}

uint64_t CachingPool::release_over_max_cached(Lock& lock) {
  if (!options_.max_cached_bytes || store_.free_bytes() <= *options_.max_cached_bytes) return 0;
  if (capture_.active()) return 0;
  return release_segments(store_.detach_free_segments(*options_.max_cached_bytes), lock);
}

uint64_t CachingPool::release_segments(const std::vector<Segment>& segments, Lock& lock,
                                       bool context_ending) {
  note_reserved();  // the segments left the store
  if (segments.empty()) return 0;
  uint64_t released = 0;
  uint64_t freed = 0;
  std::vector<Segment> kept;  // a capture began meanwhile: a free would invalidate it
  ++releasing_;
  lock.unlock();
  {
    // In the pool's own context. One that cannot be made current any more is gone, its memory
    // with it (a destroy the shim did not hear of): its addresses may be another allocation's now.
    ScopedCurrentContext current(api_);
    if (current.pushed()) {
      for (const Segment& segment : segments) {
        const CUresult result =
            kept.empty() ? api_.free_segment(segment.ptr) : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        if (result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
          kept.push_back(segment);
          continue;
        }
        ++freed;
        if (result == CUDA_SUCCESS) released += segment.size;
      }
    }
  }
  lock.lock();
  if (--releasing_ == 0) releases_done_.notify_all();
  counters_.driver_free_calls += freed;
  try {
    if (!context_ending) {
      for (const Segment& segment : kept) store_.add_free_segment(segment);
    }
  } catch (...) {
    // Out of host memory: the segments not taken back stay with the driver, unused.
  }
  note_reserved();
  return released;
}

void CachingPool::note_reserved() {
  const uint64_t reserved = store_.reserved_bytes() + unpooled_bytes_;
  counters_.peak_reserved_bytes = std::max(counters_.peak_reserved_bytes, reserved);
  limit_.add_reserved(static_cast<int64_t>(reserved - reserved_told_));
  reserved_told_ = reserved;
}

void CachingPool::complete_every_fence(Lock& lock) {
  drain_caches();
  if (pending_bytes_ > 0) synchronize_and_complete_all(lock);
  drain_caches();  // what completing the fences sent back to them
}

FlushResult CachingPool::flush() {
  FlushResult result;
  if (capture_.active()) return result;
  ScopedCurrentContext current(api_);
  {
    Lock lock(mutex_);
    std::vector<Segment> detached;
    {
      FenceClaim claim(*this, lock, /*wait=*/true);
      if (capture_.active()) return result;
      complete_every_fence(lock);
      detached = store_.detach_free_segments(0);
    }
    // Without the claim: each free waits for the device's work, which the program's threads may
    // keep queuing, and their reuse of what they free needs the claim meanwhile.
    result.segment_bytes = release_segments(detached, lock);
    counters_.released_by_flush_bytes += result.segment_bytes;
  }
  if (!capture_.active()) result.stream_ordered_bytes = api_.trim_stream_ordered_pools();
  return result;
}

uint64_t CachingPool::trim(uint64_t keep_cached_bytes) {
  return release_free_segments(keep_cached_bytes, &PoolStats::released_by_flush_bytes);
}

uint64_t CachingPool::release_for_out_of_memory() {
  return release_free_segments(0, &PoolStats::released_by_oom_bytes);
}

uint64_t CachingPool::release_free_segments(uint64_t keep_cached_bytes,
                                            uint64_t PoolStats::*released_by) {
  if (!options_.enabled || capture_.active()) return 0;
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  std::vector<Segment> detached;
  {
    FenceClaim claim(*this, lock, /*wait=*/true);
    if (capture_.active()) return 0;
    complete_every_fence(lock);
    detached = store_.detach_free_segments(keep_cached_bytes);
  }
  const uint64_t released = release_segments(detached, lock);  // without the claim, as flush()
  counters_.*released_by += released;
  return released;
}

void CachingPool::ready_freed_blocks() {
  if (!options_.enabled) return;
  Lock lock(mutex_);
  if (capture_.active()) return;
  drain_caches();
  if (pending_bytes_ == 0) return;
  FenceClaim claim(*this, lock, /*wait=*/true);
  fence_what_was_freed(lock);
}

void CachingPool::fence_what_was_freed(Lock& lock) {
  poll_fences(lock);
  issue_fence(lock);
  poll_fences(lock);
}

template <typename Release>
uint64_t CachingPool::fence_and_release_without_waiting(Release&& release) {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  FenceClaim claim(*this, lock, /*wait=*/false);
  if (!claim.held() || capture_.active()) return 0;
  drain_caches();
  fence_what_was_freed(lock);
  drain_caches();  // what completing the fences sent back to them
  return release(lock);
}

uint64_t CachingPool::release_if_idle(std::chrono::steady_clock::time_point now) {
  if (!options_.enabled || !options_.idle_release) return 0;
  {
    Lock lock(mutex_);
    fold_caches();  // their allocations count
    if (!idle_since_ || allocation_count_ != idle_seen_count_) {
      idle_seen_count_ = allocation_count_;
      idle_since_ = now;
      return 0;
    }
    if (now - *idle_since_ < *options_.idle_release) return 0;
    if (capture_.active() || store_.free_bytes() + pending_bytes_ + bytes_in_caches() == 0) {
      return 0;
    }
  }
  return fence_and_release_without_waiting([this](Lock& lock) {
    const uint64_t released = release_segments(store_.detach_free_segments(0), lock);
    counters_.released_by_idle_bytes += released;
    return released;
  });
}

uint64_t CachingPool::enforce_max_cached() {
  if (!options_.enabled || !options_.max_cached_bytes) return 0;
  if (reclaimable_bytes() <= *options_.max_cached_bytes) return 0;
  return fence_and_release_without_waiting(
      [this](Lock& lock) { return release_over_max_cached(lock); });
}

void CachingPool::drop() {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  FenceClaim claim(*this, lock, /*wait=*/true);
  {
    // A flush's frees finish before the context goes (they are made without the claim).
    const support::DeferredCancellation deferred;
    releases_done_.wait(lock, [this] { return releasing_ == 0; });
  }
  // The caches stay their threads' (each thread still points to its own), empty.
  drain_caches();
  std::vector<CUevent> events;
  events.swap(spare_events_);
  if (last_marker_ != nullptr) events.push_back(last_marker_);
  last_marker_ = nullptr;
  marker_reuse_ = false;
  for (const auto& fence : fences_) {
    events.insert(events.end(), fence->events.begin(), fence->events.end());
  }
  events.insert(events.end(), draining_.begin(), draining_.end());
  draining_.clear();
  fences_.clear();
  unfenced_.clear();
  unfenced_bytes_ = 0;
  pending_bytes_ = 0;
  // Live blocks and pool-off allocations are forgotten: the driver frees them with the context, so
  // the attribution retires them too.
  std::vector<std::pair<uint32_t, size_t>> live_tags;
  const std::vector<Segment> unused = store_.detach_all(&live_tags);
  for (const auto& [unpooled_ptr, unpooled] : unpooled_) {
    if (unpooled.tag != 0) live_tags.emplace_back(unpooled.tag, unpooled.rounded);
  }
  for (const auto& [live_tag, size] : live_tags) untag(live_tag, size, 0, nullptr);
  limit_.uncharge(in_use_bytes_);
  in_use_bytes_ = 0;
  unpooled_.clear();
  unpooled_bytes_ = 0;
  streams_.clear();
  mode_ = ReuseMode::kLegacyOrdered;
  // cuMemFree waits for the work still using a segment, so no fence is needed first.
  release_segments(unused, lock, /*context_ending=*/true);
  lock.unlock();
  for (CUevent event : events) api_.destroy_event(event);
  lock.lock();
}

uint64_t CachingPool::reclaimable_bytes() {
  Lock lock(mutex_);
  return store_.free_bytes() + pending_bytes_ + bytes_in_caches();
}

uint64_t CachingPool::bytes_in_caches() {
  uint64_t bytes = 0;
  if (caches_ != nullptr) {
    caches_->for_each(this, [&bytes](ThreadCache& cache) {
      std::lock_guard<support::AdaptiveMutex> guard(cache.lock());
      bytes += cache.ready_bytes() + cache.pending_bytes();
    });
  }
  return bytes;
}

PoolPicture CachingPool::picture() {
  // The blocks are copied under the lock into memory made and touched before it, and arranged into
  // segments after: growing the picture's vectors under the lock (page faults, copies) held the
  // job's allocating threads 31-65 ms at a million live blocks.
  struct BlockCopy {
    CUdeviceptr base;  // of its segment
    BlockPicture block;
  };
  std::vector<BlockCopy> copies;
  {
    size_t blocks = 0;
    {
      Lock lock(mutex_);
      blocks = store_.block_count() + unpooled_.size();
    }
    copies.resize(blocks + blocks / 8 + 64);  // blocks made meanwhile
  }
  size_t copied = 0;
  auto keep = [&](CUdeviceptr base, const BlockPicture& block) {
    if (copied < copies.size()) {
      copies[copied] = {base, block};
    } else {
      copies.push_back({base, block});
    }
    ++copied;
  };
  PoolPicture picture;
  bool any_unpooled = false;
  {
    Lock lock(mutex_);
    drain_caches();  // a held block's state is its cache's to know
    store_.for_each_segment([&](const Block& head) {
      for (const Block* block = &head; block != nullptr; block = block->next) {
        const bool allocated = block->state == BlockState::kAllocated;
        keep(head.ptr, {block->ptr - head.ptr, block->size, block->state,
                        allocated ? block->requested : 0, allocated ? block->tag : 0u});
      }
    });
    // With the pool off, each live allocation is a driver allocation of its own: a segment of one
    // block, so that the segments still add up to the reserved bytes.
    for (const auto& [ptr, unpooled] : unpooled_) {
      keep(ptr, {0, unpooled.rounded, BlockState::kAllocated, unpooled.rounded, unpooled.tag});
    }
    any_unpooled = !unpooled_.empty();
    picture.free_bytes = store_.free_bytes();
    picture.pending_bytes = pending_bytes_;
  }
  copies.resize(copied);
  // A segment's blocks were copied one after another.
  for (const BlockCopy& copy : copies) {
    if (picture.segments.empty() || picture.segments.back().base != copy.base) {
      picture.segments.push_back({copy.base, 0, {}});
    }
    SegmentPicture& segment = picture.segments.back();
    segment.size += copy.block.size;
    // Adjacent free blocks not merged yet (BlockStore::make_free) are one free block.
    const bool continues_free =
        copy.block.state == BlockState::kFree && !segment.blocks.empty() &&
        segment.blocks.back().state == BlockState::kFree &&
        segment.blocks.back().offset + segment.blocks.back().size == copy.block.offset;
    if (continues_free) {
      segment.blocks.back().size += copy.block.size;
    } else {
      segment.blocks.push_back(copy.block);
    }
    if (copy.block.state == BlockState::kFree) {
      picture.largest_free_block =
          std::max<uint64_t>(picture.largest_free_block, segment.blocks.back().size);
    }
  }
  if (any_unpooled) {
    std::sort(picture.segments.begin(), picture.segments.end(),
              [](const SegmentPicture& a, const SegmentPicture& b) { return a.base < b.base; });
  }
  return picture;
}

PoolStats CachingPool::stats() {
  Lock lock(mutex_);
  fold_caches();
  PoolStats stats = counters_;
  stats.in_use_bytes = in_use_bytes_;
  stats.reserved_bytes = store_.reserved_bytes() + unpooled_bytes_;
  stats.cached_bytes =
      stats.reserved_bytes > in_use_bytes_ ? stats.reserved_bytes - in_use_bytes_ : 0;
  stats.limit_bytes = limit_.get();
  return stats;
}

}  // namespace vramshim::pool
