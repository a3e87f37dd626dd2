#include "shim/pool/caching_pool.h"

#include <algorithm>
#include <thread>

namespace vramshim::pool {

namespace {

constexpr uint64_t kMinPendingBound = uint64_t{64} << 20;

}  // namespace

CachingPool::FenceClaim::FenceClaim(CachingPool& pool, Lock& lock, bool wait)
    : pool_(pool), held_(false) {
  if (wait) pool_.fence_released_.wait(lock, [this] { return !pool_.fence_claimed_; });
  if (pool_.fence_claimed_) return;
  pool_.fence_claimed_ = true;
  held_ = true;
}

// The lock is held again whenever a claim goes out of scope.
CachingPool::FenceClaim::~FenceClaim() {
  if (!held_) return;
  pool_.fence_claimed_ = false;
  pool_.fence_released_.notify_all();
}

CachingPool::CachingPool(DeviceApi& api, const PoolOptions& options, DeviceLimit& limit,
                         const CaptureState& capture)
    : api_(api),
      options_(options),
      limit_(limit),
      capture_(capture),
      store_(SizePolicy(options.split_blocks)) {}

CachingPool::~CachingPool() = default;

CUresult CachingPool::allocate(size_t bytes, CUdeviceptr* ptr) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!options_.enabled) return allocate_unpooled(bytes, ptr);
  if (bytes > SizePolicy::kMaxRequest) return CUDA_ERROR_OUT_OF_MEMORY;
  const size_t rounded = SizePolicy::round(bytes);
  if (!limit_.would_fit(rounded)) return CUDA_ERROR_OUT_OF_MEMORY;

  Lock lock(mutex_);
  ++allocation_count_;
  Block* block = store_.take(rounded);
  if (block != nullptr) {
    ++counters_.pool_hits;
  } else if (!capture_.active() && (block = take_after_fences(rounded, lock)) != nullptr) {
    ++counters_.pool_hits;
  } else {
    const size_t segment_size = store_.policy().segment_size(rounded);
    release_cache_before_new_peak(rounded, segment_size, lock);
    CUresult result = grow(segment_size, rounded, lock, &block);
    if (result == CUDA_ERROR_OUT_OF_MEMORY && !capture_.active()) {
      result = allocate_after_oom(rounded, segment_size, lock, &block);
    }
    if (result != CUDA_SUCCESS) return result;
  }

  if (!limit_.try_charge(rounded)) {
    give_back(block);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  in_use_bytes_ += rounded;
  counters_.peak_in_use_bytes = std::max(counters_.peak_in_use_bytes, in_use_bytes_);
  *ptr = block->ptr;
  return CUDA_SUCCESS;
}

Block* CachingPool::take_after_fences(size_t rounded, Lock& lock) {
  if (pending_bytes_ == 0) return nullptr;
  Block* block = nullptr;
  {
    // Past the bound this thread must make progress on fences, so it waits for the claim.
    FenceClaim claim(*this, lock, /*wait=*/pending_bytes_ > pending_bound());
    if (!claim.held()) return nullptr;
    poll_fences(lock);
    if ((block = store_.take(rounded)) != nullptr) return block;
    issue_fence(lock);
    poll_fences(lock);
    if ((block = store_.take(rounded)) != nullptr) return block;
    if (mode_ == ReuseMode::kContextSynchronize && pending_bytes_ >= rounded &&
        synchronize_and_complete_all(lock) && (block = store_.take(rounded)) != nullptr) {
      return block;
    }
    while (pending_bytes_ > pending_bound() && wait_oldest_fence(lock)) {
      if ((block = store_.take(rounded)) != nullptr) return block;
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
  *block = store_.add_segment_and_take(base, segment_size, rounded);
  note_reserved();
  return CUDA_SUCCESS;
}

CUresult CachingPool::allocate_after_oom(size_t rounded, size_t segment_size, Lock& lock,
                                         Block** block) {
  {
    FenceClaim claim(*this, lock, /*wait=*/true);
    if (pending_bytes_ > 0 && synchronize_and_complete_all(lock) &&
        (*block = store_.take(rounded)) != nullptr) {
      ++counters_.pool_hits;
      return CUDA_SUCCESS;
    }
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
  if (in_use_bytes_ + rounded <= counters_.peak_in_use_bytes) return;
  if (store_.reserved_bytes() + segment_size <= counters_.peak_reserved_bytes) return;
  release_segments(store_.detach_free_segments(0), lock);
}

void CachingPool::give_back(Block* block) { store_.make_free(store_.retire(block->ptr)); }

FreeResult CachingPool::free(CUdeviceptr ptr) {
  Lock lock(mutex_);
  if (!options_.enabled) return free_unpooled(ptr, lock);
  Block* block = store_.retire(ptr);
  if (block == nullptr) return {false, CUDA_SUCCESS};
  const size_t requested = block->requested;
  in_use_bytes_ -= requested;
  limit_.uncharge(requested);
  if (mode_ == ReuseMode::kImmediate) {
    store_.make_free(block);
    release_over_max_cached(lock);
  } else {
    unfenced_.push_back(block);
    unfenced_bytes_ += block->size;
    pending_bytes_ += block->size;
  }
  return {true, CUDA_SUCCESS};
}

bool CachingPool::owns(CUdeviceptr ptr) const { return allocation_size(ptr).has_value(); }

std::optional<size_t> CachingPool::allocation_size(CUdeviceptr ptr) const {
  Lock lock(mutex_);
  if (!options_.enabled) {
    const auto it = unpooled_.find(ptr);
    if (it == unpooled_.end()) return std::nullopt;
    return it->second;
  }
  const Block* block = store_.find_allocated(ptr);
  if (block == nullptr) return std::nullopt;
  return block->requested;
}

CUresult CachingPool::allocate_unpooled(size_t bytes, CUdeviceptr* ptr) {
  const size_t rounded = SizePolicy::round(bytes);
  if (!limit_.try_charge(rounded)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult result = api_.allocate(bytes, ptr);
  Lock lock(mutex_);
  ++allocation_count_;
  ++counters_.driver_alloc_calls;
  if (result != CUDA_SUCCESS) {
    limit_.uncharge(rounded);
    return result;
  }
  ++counters_.pool_misses;
  unpooled_[*ptr] = rounded;
  unpooled_bytes_ += rounded;
  in_use_bytes_ += rounded;
  counters_.peak_in_use_bytes = std::max(counters_.peak_in_use_bytes, in_use_bytes_);
  note_reserved();
  return CUDA_SUCCESS;
}

FreeResult CachingPool::free_unpooled(CUdeviceptr ptr, Lock& lock) {
  const auto it = unpooled_.find(ptr);
  if (it == unpooled_.end()) return {false, CUDA_SUCCESS};
  const size_t rounded = it->second;
  unpooled_.erase(it);
  unpooled_bytes_ -= rounded;
  in_use_bytes_ -= rounded;
  limit_.uncharge(rounded);
  lock.unlock();
  const CUresult result = api_.free(ptr);
  lock.lock();
  ++counters_.driver_free_calls;
  return {true, result};
}

void CachingPool::on_stream_created(CUstream stream, unsigned flags) {
  Lock lock(mutex_);
  streams_.add(stream, flags);
  update_reuse_mode(lock);
}

void CachingPool::on_stream_destroyed(CUstream stream) {
  Lock lock(mutex_);
  // A fence being issued may be recording on this stream: wait until no fence work is in flight.
  FenceClaim claim(*this, lock, /*wait=*/true);
  streams_.remove(stream);
  // One stream fewer never makes reuse stricter, so no free block needs fencing here.
  mode_ = streams_.mode();
}

void CachingPool::on_per_thread_stream_used() {
  if (per_thread_stream_seen_.load(std::memory_order_relaxed)) return;
  Lock lock(mutex_);
  per_thread_stream_seen_.store(true, std::memory_order_relaxed);
  streams_.mark_per_thread_used();
  update_reuse_mode(lock);
}

void CachingPool::update_reuse_mode(Lock& lock) {
  const ReuseMode previous = mode_;
  mode_ = streams_.mode();
  if (previous != ReuseMode::kImmediate || mode_ == ReuseMode::kImmediate) return;
  // Blocks reused at once were safe only while every stream was ordered with the legacy one. The
  // free blocks now wait for a fence; and since blocks already handed out again may still be
  // touched by work queued before their free, one synchronize (outside a capture) covers those too.
  move_free_blocks_to_pending();
  if (capture_.active() || store_.reserved_bytes() == 0) return;
  FenceClaim claim(*this, lock, /*wait=*/true);
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
  auto fence = std::make_unique<Fence>();
  fence->blocks.swap(unfenced_);
  fence->bytes = unfenced_bytes_;
  unfenced_bytes_ = 0;
  ++counters_.fences_issued;
  if (mode_ == ReuseMode::kContextSynchronize) {
    fence->needs_context_sync = true;
    fences_.push_back(std::move(fence));
    return;
  }
  std::vector<CUstream> targets = streams_.streams();
  targets.push_back(CU_STREAM_LEGACY);
  while (!spare_events_.empty() && fence->events.size() < targets.size()) {
    fence->events.push_back(spare_events_.back());
    spare_events_.pop_back();
  }
  lock.unlock();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i == fence->events.size()) {
      CUevent event = nullptr;
      if (api_.create_event(&event) != CUDA_SUCCESS) {
        fence->needs_context_sync = true;
        break;
      }
      fence->events.push_back(event);
    }
    if (api_.record_event(fence->events[i], targets[i]) != CUDA_SUCCESS) {
      fence->needs_context_sync = true;
      break;
    }
  }
  lock.lock();
  fences_.push_back(std::move(fence));
}

void CachingPool::poll_fences(Lock& lock) {
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
    if (!ready) return;
    complete_front_fence();
  }
}

bool CachingPool::wait_oldest_fence(Lock& lock) {
  if (fences_.empty()) return false;
  Fence& fence = *fences_.front();
  if (fence.needs_context_sync) return synchronize_and_complete_all(lock);
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
    auto fence = std::make_unique<Fence>();
    fence->blocks.swap(unfenced_);
    fence->bytes = unfenced_bytes_;
    fence->needs_context_sync = true;
    unfenced_bytes_ = 0;
    ++counters_.fences_issued;
    fences_.push_back(std::move(fence));
  }
  // Everything freed before the synchronize is covered; later frees wait for the next fence.
  const size_t covered = fences_.size();
  lock.unlock();
  const CUresult result = api_.synchronize_context();
  lock.lock();
  ++counters_.synchronizations;
  if (result != CUDA_SUCCESS) return false;
  for (size_t i = 0; i < covered; ++i) complete_front_fence();
  return true;
}

void CachingPool::complete_front_fence() {
  std::unique_ptr<Fence> fence = std::move(fences_.front());
  fences_.pop_front();
  for (Block* block : fence->blocks) store_.make_free(block);
  pending_bytes_ -= fence->bytes;
  spare_events_.insert(spare_events_.end(), fence->events.begin(), fence->events.end());
}

void CachingPool::release_over_max_cached(Lock& lock) {
  if (!options_.max_cached_bytes || store_.free_bytes() <= *options_.max_cached_bytes) return;
  if (capture_.active()) return;
  release_segments(store_.detach_free_segments(*options_.max_cached_bytes), lock);
}

uint64_t CachingPool::release_segments(const std::vector<Segment>& segments, Lock& lock) {
  if (segments.empty()) return 0;
  uint64_t released = 0;
  lock.unlock();
  for (const Segment& segment : segments) {
    if (api_.free(segment.ptr) == CUDA_SUCCESS) released += segment.size;
  }
  lock.lock();
  counters_.driver_free_calls += segments.size();
  return released;
}

void CachingPool::note_reserved() {
  const uint64_t reserved = store_.reserved_bytes() + unpooled_bytes_;
  counters_.peak_reserved_bytes = std::max(counters_.peak_reserved_bytes, reserved);
}

bool CachingPool::wait_for_capture_end() const {
  const auto deadline = std::chrono::steady_clock::now() + options_.flush_capture_wait;
  while (capture_.active()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

FlushResult CachingPool::flush() {
  FlushResult result;
  if (!wait_for_capture_end()) return result;
  ScopedCurrentContext current(api_);
  {
    Lock lock(mutex_);
    FenceClaim claim(*this, lock, /*wait=*/true);
    if (capture_.active()) return result;
    if (pending_bytes_ > 0) synchronize_and_complete_all(lock);
    result.segment_bytes = release_segments(store_.detach_free_segments(0), lock);
    counters_.released_by_flush_bytes += result.segment_bytes;
  }
  if (!capture_.active()) result.stream_ordered_bytes = api_.trim_stream_ordered_pools();
  return result;
}

uint64_t CachingPool::trim(uint64_t keep_cached_bytes) {
  if (!options_.enabled || !wait_for_capture_end()) return 0;
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  FenceClaim claim(*this, lock, /*wait=*/true);
  if (capture_.active()) return 0;
  if (pending_bytes_ > 0) synchronize_and_complete_all(lock);
  const uint64_t released = release_segments(store_.detach_free_segments(keep_cached_bytes), lock);
  counters_.released_by_flush_bytes += released;
  return released;
}

uint64_t CachingPool::release_if_idle(std::chrono::steady_clock::time_point now) {
  if (!options_.enabled || !options_.idle_release) return 0;
  {
    Lock lock(mutex_);
    if (!idle_since_ || allocation_count_ != idle_seen_count_) {
      idle_seen_count_ = allocation_count_;
      idle_since_ = now;
      return 0;
    }
    if (now - *idle_since_ < *options_.idle_release) return 0;
    if (capture_.active() || (store_.free_bytes() == 0 && pending_bytes_ == 0)) return 0;
  }
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  FenceClaim claim(*this, lock, /*wait=*/false);
  if (!claim.held() || capture_.active()) return 0;
  poll_fences(lock);
  issue_fence(lock);
  poll_fences(lock);
  const uint64_t released = release_segments(store_.detach_free_segments(0), lock);
  counters_.released_by_idle_bytes += released;
  return released;
}

void CachingPool::drop() {
  ScopedCurrentContext current(api_);
  Lock lock(mutex_);
  FenceClaim claim(*this, lock, /*wait=*/true);
  std::vector<CUevent> events;
  events.swap(spare_events_);
  for (const auto& fence : fences_) {
    events.insert(events.end(), fence->events.begin(), fence->events.end());
  }
  fences_.clear();
  unfenced_.clear();
  unfenced_bytes_ = 0;
  pending_bytes_ = 0;
  // Live blocks and pool-off allocations are forgotten: the driver frees them with the context.
  const std::vector<Segment> unused = store_.detach_all();
  limit_.uncharge(in_use_bytes_);
  in_use_bytes_ = 0;
  unpooled_.clear();
  unpooled_bytes_ = 0;
  streams_.clear();
  mode_ = ReuseMode::kImmediate;
  per_thread_stream_seen_.store(false, std::memory_order_relaxed);
  // cuMemFree waits for the work still using a segment, so no fence is needed first.
  release_segments(unused, lock);
  lock.unlock();
  for (CUevent event : events) api_.destroy_event(event);
  lock.lock();
}

uint64_t CachingPool::reclaimable_bytes() const {
  Lock lock(mutex_);
  return store_.free_bytes() + pending_bytes_;
}

PoolStats CachingPool::stats() const {
  Lock lock(mutex_);
  PoolStats stats = counters_;
  stats.in_use_bytes = in_use_bytes_;
  stats.reserved_bytes = store_.reserved_bytes() + unpooled_bytes_;
  stats.cached_bytes =
      stats.reserved_bytes > in_use_bytes_ ? stats.reserved_bytes - in_use_bytes_ : 0;
  stats.limit_bytes = limit_.get();
  return stats;
}

}  // namespace vramshim::pool
