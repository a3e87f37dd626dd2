#include "shim/pool/pool_registry.h"

#include <algorithm>
#include <new>

namespace vramshim::pool {

PoolRegistry::PoolRegistry(const PoolOptions& options, const CaptureState& capture,
                           AllocationTagger* tagger)
    : options_(options), capture_(capture), tagger_(tagger), limit_(options.limit_bytes) {}

PoolRegistry::~PoolRegistry() = default;

size_t PoolRegistry::slot_index(CUcontext context) {
  uint64_t key = reinterpret_cast<uintptr_t>(context);
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return static_cast<size_t>(key % kMaxContexts);
}

void PoolRegistry::begin_change(Slot& slot) {
  slot.changes.store(slot.changes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // before the stores that follow
}

void PoolRegistry::end_change(Slot& slot) {
  slot.changes.store(slot.changes.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

CachingPool* PoolRegistry::find(CUcontext context) const {
  if (context == nullptr || stopped()) return nullptr;
  const size_t start = slot_index(context);
  for (size_t probe = 0; probe < kMaxContexts; ++probe) {
    const Slot& slot = slots_[(start + probe) % kMaxContexts];
    const uint32_t before = slot.changes.load(std::memory_order_acquire);
    const CUcontext key = slot.context.load(std::memory_order_acquire);
    if (key == nullptr) return nullptr;
    if (key != context) continue;
    CachingPool* pool = slot.pool.load(std::memory_order_acquire);
    // A removed context's slot may be given to another context meanwhile (and back): a slot that
    // changed while it was read answers none, and the caller asks insert(), under the mutex.
    std::atomic_thread_fence(std::memory_order_acquire);
    const bool steady = before % 2 == 0 && slot.changes.load(std::memory_order_relaxed) == before;
    return steady ? pool : nullptr;
  }
  return nullptr;
}

CachingPool* PoolRegistry::insert(CUcontext context, int device, std::unique_ptr<DeviceApi> api) {
  if (context == nullptr || api == nullptr) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  // A slot keeps a key once set, so a probe sequence never breaks: a removed context's slot (no
  // pool) goes to the next context that probes past it, or to the same context when it comes back.
  const size_t start = slot_index(context);
  Slot* own = nullptr;
  Slot* vacant = nullptr;
  for (size_t probe = 0; probe < kMaxContexts && own == nullptr; ++probe) {
    Slot& slot = slots_[(start + probe) % kMaxContexts];
    const CUcontext key = slot.context.load(std::memory_order_relaxed);
    if (key == context) own = &slot;
    const bool removed = key != nullptr && slot.pool.load(std::memory_order_relaxed) == nullptr;
    if ((key == nullptr || removed) && vacant == nullptr) vacant = &slot;
    if (key == nullptr) break;
  }
  if (own != nullptr) {
    if (CachingPool* existing = own->pool.load(std::memory_order_relaxed)) return existing;
  }
  Slot* const target = own != nullptr ? own : vacant;
  if (target == nullptr) return nullptr;

  auto entry = std::make_unique<Entry>();
  entry->context = context;
  entry->device = device;
  entry->api = std::move(api);
  DeviceEntry& shared = device_entry(device);
  entry->pool = std::make_unique<CachingPool>(*entry->api, options_, shared.limit, capture_,
                                              tagger_, device, &shared.caches);
  CachingPool* pool = entry->pool.get();
  if (unfenceable_stream_) pool->on_unfenceable_stream();
  // Before any other thread can find the pool. (A context first seen here, made through a door the
  // shim does not hook, is not added to the device's list: its end would go unseen.)
  std::vector<CUcontext> others;
  for (CUcontext known : shared.contexts) {
    if (known != context) others.push_back(known);
  }
  if (!others.empty()) pool->set_other_contexts(std::move(others));
  if (other_devices_live(device)) pool->set_other_devices(true);
  entries_.push_back(std::move(entry));
  begin_change(*target);
  target->context.store(context, std::memory_order_relaxed);
  target->pool.store(pool, std::memory_order_relaxed);
  end_change(*target);
  return pool;
}

bool PoolRegistry::knows_context(CUcontext context, int device) {
  const std::vector<CUcontext>& contexts = device_entry(device).contexts;
  return std::find(contexts.begin(), contexts.end(), context) != contexts.end();
}

void PoolRegistry::add_context(CUcontext context, int device) {
  if (context == nullptr) return;
  {
    // The common case, a primary context retained again, takes no lock held across pool work.
    std::lock_guard<std::mutex> guard(mutex_);
    if (knows_context(context, device)) return;
  }
  std::lock_guard<std::mutex> changes(contexts_mutex_);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (knows_context(context, device)) return;
    device_entry(device).contexts.push_back(context);
  }
  tell_pools_other_contexts(device);
  tell_pools_other_devices();
}

bool PoolRegistry::other_devices_live(int device) const {
  for (const auto& shared : devices_) {
    if (shared->device != device && !shared->contexts.empty()) return true;
  }
  return false;
}

void PoolRegistry::tell_pools_other_devices() {
  std::vector<std::pair<bool, CachingPool*>> pools;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopped()) return;
    for (const auto& entry : entries_) {
      if (!entry->removed) pools.emplace_back(other_devices_live(entry->device), entry->pool.get());
    }
  }
  for (const auto& [others, pool] : pools) pool->set_other_devices(others);
}

void PoolRegistry::tell_pools_other_contexts(int device) {
  std::vector<CUcontext> contexts;
  std::vector<std::pair<CUcontext, CachingPool*>> pools;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopped()) return;
    contexts = device_entry(device).contexts;
    for (const auto& entry : entries_) {
      if (entry->device == device && !entry->removed) {
        pools.emplace_back(entry->context, entry->pool.get());
      }
    }
  }
  for (const auto& [own, pool] : pools) {
    std::vector<CUcontext> others;
    for (CUcontext context : contexts) {
      if (context != own) others.push_back(context);
    }
    pool->set_other_contexts(std::move(others));
  }
}

void PoolRegistry::remove(CUcontext context) {
  std::lock_guard<std::mutex> changes(contexts_mutex_);
  CachingPool* pool = nullptr;
  int device = -1;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto& shared : devices_) {
      std::vector<CUcontext>& contexts = shared->contexts;
      const auto found = std::find(contexts.begin(), contexts.end(), context);
      if (found == contexts.end()) continue;
      contexts.erase(found);
      device = shared->device;
    }
    const size_t start = slot_index(context);
    for (size_t probe = 0; probe < kMaxContexts && pool == nullptr; ++probe) {
      Slot& slot = slots_[(start + probe) % kMaxContexts];
      const CUcontext key = slot.context.load(std::memory_order_relaxed);
      if (key == nullptr) break;
      if (key != context) continue;
      begin_change(slot);
      pool = slot.pool.exchange(nullptr, std::memory_order_relaxed);
      end_change(slot);
    }
    for (auto& entry : entries_) {
      if (pool != nullptr && entry->pool.get() == pool) entry->removed = true;
    }
  }
  if (stopped()) return;  // the driver frees the context's memory with it
  if (pool != nullptr) {
    pool->drop();
    retire(pool);
  }
  if (device >= 0) tell_pools_other_contexts(device);
  if (device >= 0) tell_pools_other_devices();
}

void PoolRegistry::retire(CachingPool* pool) {
  const PoolStats figures = pool->stats();  // final: the pool is dropped and no slot holds it
  std::lock_guard<std::mutex> guard(mutex_);
  const auto found = std::find_if(entries_.begin(), entries_.end(),
                                  [pool](const auto& entry) { return entry->pool.get() == pool; });
  if (found == entries_.end()) return;
  device_entry((*found)->device).removed += figures;
  removed_entries_.push_back(std::move(*found));
  entries_.erase(found);
}

PoolRegistry::DeviceEntry& PoolRegistry::device_entry(int device) {
  for (auto& entry : devices_) {
    if (entry->device == device) return *entry;
  }
  devices_.push_back(std::make_unique<DeviceEntry>(
      device, limit_, tagger_ != nullptr ? &tagger_->figures_lock(device) : nullptr));
  if (device >= 0 && device < kIndexedDevices) {
    limits_by_device_[device].store(&devices_.back()->limit, std::memory_order_release);
  }
  return *devices_.back();
}

DeviceLimit* PoolRegistry::limit_of(int device) {
  if (device < 0 || device >= kIndexedDevices || stopped()) return nullptr;
  return limits_by_device_[device].load(std::memory_order_acquire);
}

DeviceLimit* PoolRegistry::make_limit_of(int device) {
  if (device < 0 || device >= kIndexedDevices || stopped()) return nullptr;
  std::lock_guard<std::mutex> guard(mutex_);
  try {
    return &device_entry(device).limit;
  } catch (const std::bad_alloc&) {
    return nullptr;  // the allocation goes uncounted
  }
}

void PoolRegistry::fold_device_caches(int device) {
  const std::vector<std::pair<int, CachingPool*>> pools = pools_of(device);
  if (!pools.empty()) pools.front().second->fold_device_caches();
}

const DeviceLimit* PoolRegistry::find_limit(int device) const {
  for (const auto& entry : devices_) {
    if (entry->device == device) return &entry->limit;
  }
  return nullptr;
}

std::vector<CachingPool*> PoolRegistry::live_pools() const {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<CachingPool*> pools;
  if (stopped()) return pools;
  for (const auto& entry : entries_) {
    if (!entry->removed) pools.push_back(entry->pool.get());
  }
  return pools;
}

template <typename Predicate>
CachingPool* PoolRegistry::first_pool(Predicate&& predicate) const {
  // A removed pool's slot holds no pool (and the pool holds no segment any more).
  for (const Slot& slot : slots_) {
    CachingPool* pool = slot.pool.load(std::memory_order_acquire);
    if (pool != nullptr && predicate(*pool)) return pool;
  }
  return nullptr;
}

CachingPool* PoolRegistry::find_holder(CUdeviceptr ptr) const {
  return first_pool([ptr](const CachingPool& pool) { return pool.holds(ptr); });
}

bool PoolRegistry::in_some_segment(CUdeviceptr ptr) const {
  return first_pool([ptr](const CachingPool& pool) { return pool.in_segment(ptr); }) != nullptr;
}

void PoolRegistry::on_unfenceable_stream() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    unfenceable_stream_ = true;
  }
  for (CachingPool* pool : live_pools()) pool->on_unfenceable_stream();
}

void PoolRegistry::after_captures_end() {
  for (CachingPool* pool : live_pools()) pool->after_captures_end();
}

FlushResult PoolRegistry::flush_all() {
  FlushResult total;
  for (CachingPool* pool : live_pools()) {
    const FlushResult result = pool->flush();
    total.segment_bytes += result.segment_bytes;
    total.stream_ordered_bytes += result.stream_ordered_bytes;
  }
  return total;
}

uint64_t PoolRegistry::release_for_out_of_memory(int device, const CachingPool* except) {
  uint64_t released = 0;
  for (const auto& [pool_device, pool] : pools_of(device)) {
    if (pool != except) released += pool->release_for_out_of_memory();
  }
  return released;
}

uint64_t PoolRegistry::trim_all(uint64_t keep_cached_bytes) {
  uint64_t released = 0;
  uint64_t budget = keep_cached_bytes;
  for (CachingPool* pool : live_pools()) {
    released += pool->trim(budget);
    const uint64_t kept = pool->reclaimable_bytes();
    budget = budget > kept ? budget - kept : 0;
  }
  return released;
}

uint64_t PoolRegistry::release_if_idle(std::chrono::steady_clock::time_point now) {
  uint64_t released = 0;
  for (CachingPool* pool : live_pools()) released += pool->release_if_idle(now);
  return released;
}

uint64_t PoolRegistry::enforce_max_cached() {
  uint64_t released = 0;
  for (CachingPool* pool : live_pools()) released += pool->enforce_max_cached();
  return released;
}

void PoolRegistry::set_limit(std::optional<uint64_t> limit) {
  std::lock_guard<std::mutex> guard(mutex_);
  limit_ = limit;
  for (auto& entry : devices_) entry->limit.set(limit);
}

std::optional<uint64_t> PoolRegistry::limit() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return limit_;
}

std::vector<DeviceStats> PoolRegistry::stats_by_device() const {
  std::vector<std::pair<int, CachingPool*>> pools;
  std::vector<DeviceStats> devices;
  std::vector<const DeviceLimit*> limits;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!stopped()) {
      for (const auto& entry : entries_) pools.emplace_back(entry->device, entry->pool.get());
    }
    for (const auto& entry : devices_) {
      devices.push_back({entry->device, entry->removed});
      devices.back().stats.limit_bytes = entry->limit.get();
      if (const uint64_t direct = entry->limit.direct_bytes(); direct > 0) {
        devices.back().stats.direct_in_use_bytes = direct;
      }
      limits.push_back(&entry->limit);  // device entries live as long as the registry
    }
  }
  for (const auto& [device, pool] : pools) {
    for (DeviceStats& stats : devices) {
      if (stats.device == device) stats.stats += pool->stats();
    }
  }
  // The device's own peaks: its pools' peaks added up are only a bound (one context's peak and
  // another's at another time).
  for (size_t i = 0; i < devices.size(); ++i) {
    devices[i].stats.peak_in_use_bytes = limits[i]->peak_in_use();
    devices[i].stats.peak_reserved_bytes = limits[i]->peak_reserved();
  }
  return devices;
}

std::vector<std::pair<int, CachingPool*>> PoolRegistry::pools_of(int device) const {
  std::vector<std::pair<int, CachingPool*>> pools;
  std::lock_guard<std::mutex> guard(mutex_);
  if (stopped()) return pools;
  for (const auto& entry : entries_) {
    if ((device < 0 || entry->device == device) && !entry->removed) {
      pools.emplace_back(entry->device, entry->pool.get());
    }
  }
  return pools;
}

PoolPicture PoolRegistry::picture_of(int device) const {
  PoolPicture together;
  for (const auto& [pool_device, pool] : pools_of(device)) {
    PoolPicture picture = pool->picture();
    together.free_bytes += picture.free_bytes;
    together.pending_bytes += picture.pending_bytes;
    together.largest_free_block = std::max(together.largest_free_block, picture.largest_free_block);
    for (SegmentPicture& segment : picture.segments) {
      segment.device = pool_device;
      together.segments.push_back(std::move(segment));
    }
  }
  return together;
}

PoolPicture PoolRegistry::picture_of_device(int device) const { return picture_of(device); }

PoolPicture PoolRegistry::picture_of_all() const { return picture_of(-1); }

MemInfo PoolRegistry::mem_get_info(int device, MemInfo driver) const {
  if (stopped()) return driver;
  std::vector<CachingPool*> pools;
  std::optional<uint64_t> limit = limit_;
  const DeviceLimit* device_limit = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (const auto& entry : entries_) {
      if (entry->device == device && !entry->removed) pools.push_back(entry->pool.get());
    }
    device_limit = find_limit(device);
    if (device_limit != nullptr) limit = device_limit->get();
  }
  // The bytes in use without the thread caches' credit.
  if (!pools.empty()) pools.front()->fold_device_caches();
  const uint64_t in_use = device_limit != nullptr ? device_limit->in_use() : 0;
  uint64_t reclaimable = 0;
  for (CachingPool* pool : pools) reclaimable += pool->reclaimable_bytes();
  return adjust_mem_info(driver, reclaimable, in_use, limit);
}

size_t PoolRegistry::device_total_mem(int device, size_t driver_total) const {
  std::lock_guard<std::mutex> guard(mutex_);
  const DeviceLimit* limit = find_limit(device);
  return adjust_total_mem(driver_total, limit ? limit->get() : limit_);
}

void PoolRegistry::reset_after_fork() {
  // The parent's other threads vanished in the child, possibly holding this mutex or a pool's:
  // rebuild the mutex, and leak the pools instead of destroying them.
  new (&mutex_) std::mutex();
  new (&contexts_mutex_) std::mutex();
  for (auto& entry : entries_) entry.release();
  entries_.clear();
  for (auto& entry : removed_entries_) entry.release();
  removed_entries_.clear();
  for (auto& entry : devices_) {
    entry->limit.reset_in_use();
    entry->contexts.clear();  // the child's shim is inert; its contexts are not the parent's
  }
  for (Slot& slot : slots_) {
    slot.pool.store(nullptr, std::memory_order_relaxed);
    slot.context.store(nullptr, std::memory_order_relaxed);
    slot.changes.store(0, std::memory_order_relaxed);  // odd, if a change was under way
  }
}

}  // namespace vramshim::pool
