#include "tests/fakecuda/driver.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/fakecuda/simulated_delay.h"

namespace vramshim::fakecuda {
namespace {

constexpr uint64_t kDefaultCapacity = uint64_t{80} << 30;
constexpr int kMaxDevices = 64;

// Parses bytes with an optional K/M/G (or KiB/MiB/GiB) suffix, powers of 1024.
bool parseSize(const char* text, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return false;
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k') scale = uint64_t{1} << 10;
  if (*end == 'M' || *end == 'm') scale = uint64_t{1} << 20;
  if (*end == 'G' || *end == 'g') scale = uint64_t{1} << 30;
  if (scale != 1) ++end;
  if (scale != 1 && std::strcmp(end, "iB") == 0) end += 2;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = value * scale;
  return true;
}

uint64_t envSize(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  uint64_t value = 0;
  if (parseSize(text, &value)) return value;
  std::fprintf(stderr, "fakecuda: ignoring %s=%s (not a size)\n", name, text);
  return fallback;
}

// A forked child must not wait for its parent's stream workers, which do not exist in it.
void lockForFork() { driver().mu.lock(); }
void unlockInParent() { driver().mu.unlock(); }
void unlockInChild() {
  Driver& d = driver();
  if (d.initialized) d.forked_after_init = true;
  d.mu.unlock();
}

Driver* makeDriver() {
  auto* d = new Driver;
  uint64_t count = envSize("FAKECUDA_DEVICES", 1);
  if (count < 1 || count > kMaxDevices) count = 1;
  const uint64_t capacity = envSize("FAKECUDA_CAPACITY", kDefaultCapacity);
  const uint64_t other_processes_bytes = envSize("FAKECUDA_OTHER_PROCESSES_BYTES", 0);
  g_alloc_delay_us.store(envSize("FAKECUDA_ALLOC_DELAY_US", 0));
  g_op_delay_us.store(envSize("FAKECUDA_OP_DELAY_US", 0));
  d->devices.resize(count);
  for (int i = 0; i < static_cast<int>(count); ++i) {
    Device& dev = d->devices[i];
    dev.capacity = capacity;
    dev.other_processes_bytes = other_processes_bytes;
    dev.primary = new Context;
    dev.primary->device = i;
    dev.primary->primary = true;
    d->contexts.insert(dev.primary);
    dev.pool = new MemPool;
    dev.pool->device = i;
    d->pools.insert(dev.pool);
  }
  return d;
}

}  // namespace

Driver& driver() {
  static Driver* d = [] {
    Driver* made = makeDriver();
    pthread_atfork(lockForFork, unlockInParent, unlockInChild);
    return made;
  }();
  return *d;
}

CUresult requireInit() {
  const Driver& d = driver();
  if (!d.initialized.load(std::memory_order_acquire) ||
      d.forked_after_init.load(std::memory_order_acquire)) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  return CUDA_SUCCESS;
}

std::vector<Context*>& contextStack() {
  thread_local std::vector<Context*> stack;
  return stack;
}

CUresult currentContext(Context** out) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  if (stack.empty() || stack.back() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (!stack.back()->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = stack.back();
  return CUDA_SUCCESS;
}

Context* findContext(Driver& d, CUcontext handle) {
  auto* c = reinterpret_cast<Context*>(handle);
  return d.contexts.count(c) ? c : nullptr;
}

void activateContext(Driver& d, Context* c) {
  c->alive = true;
  c->id = d.next_context_id++;
  c->legacy = std::make_shared<Stream>(c, StreamKind::Legacy);
}

void teardownContext(Context* c) {
  Driver& d = driver();
  std::vector<Position> tails;
  std::vector<std::shared_ptr<Stream>> closing;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!c->alive) return;
    tails = contextTails(d, c);
    c->alive = false;
    closing = c->streams;
    closing.insert(closing.end(), c->retired.begin(), c->retired.end());
    closing.push_back(c->legacy);
    for (auto& s : closing) {
      d.streams.erase(s.get());
      if (d.captures.erase(s.get())) d.active_captures.fetch_sub(1);
    }
    c->streams.clear();
    c->retired.clear();
    c->legacy.reset();
  }
  waitAll(tails);  // the real driver lets queued work finish before it tears the context down
  for (auto& s : closing) s->close();
  std::vector<Allocation> freed;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    for (auto it = d.allocations.begin(); it != d.allocations.end();) {
      const Allocation& a = it->second;
      if (a.ctx != c || a.kind == MemoryKind::Async) {
        ++it;
        continue;
      }
      if (a.kind != MemoryKind::Managed && a.kind != MemoryKind::Host) {
        Device& dev = d.devices[a.device];
        creditDevice(dev, a.accounted);
        dev.teardown_freed_bytes += a.accounted;
        dev.teardown_freed_allocations += 1;
      }
      freed.push_back(a);
      it = d.allocations.erase(it);
    }
  }
  for (const Allocation& a : freed) munmap(reinterpret_cast<void*>(a.base), a.mapped);
}

CUresult resolveStream(CUstream handle, bool per_thread_default, std::shared_ptr<Stream>* out) {
  const bool legacy = handle == CU_STREAM_LEGACY || (handle == nullptr && !per_thread_default);
  const bool per_thread =
      handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread_default);
  Driver& d = driver();
  if (legacy || per_thread) {
    Context* c = nullptr;
    if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
    std::lock_guard<std::mutex> lock(d.mu);
    if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (legacy) {
      *out = c->legacy;
      return CUDA_SUCCESS;
    }
    // One per-thread default stream per (thread, context activation); the context owns it.
    thread_local std::unordered_map<uint64_t, std::shared_ptr<Stream>> per_thread_streams;
    auto& s = per_thread_streams[c->id];
    if (!s) {
      s = std::make_shared<Stream>(c, StreamKind::PerThread);
      c->streams.push_back(s);
    }
    *out = s;
    return CUDA_SUCCESS;
  }
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.streams.find(reinterpret_cast<Stream*>(handle));
  if (it == d.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = it->second;
  return CUDA_SUCCESS;
}

void invalidateCapture(Driver& d, Capture& c) {
  if (c.invalidated) return;
  c.invalidated = true;
  d.capture_invalidations.fetch_add(1);
}

CUresult submit(const std::shared_ptr<Stream>& s, std::vector<Position> after,
                std::function<void()> op, Position* at) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = s->context();
  if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (at) *at = Position{};
  auto capture = d.captures.find(s.get());
  if (capture != d.captures.end()) {
    capture->second.operations += 1;  // recorded into the graph, not executed
    return CUDA_SUCCESS;
  }
  if (s->kind() == StreamKind::Legacy) {
    // Work on the legacy stream waits for earlier work on every blocking stream of its context,
    // the per-thread default streams included.
    for (auto& b : c->streams) {
      if (!synchronizesWithLegacy(b->kind())) continue;
      auto bc = d.captures.find(b.get());
      if (bc != d.captures.end()) {
        invalidateCapture(d, bc->second);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
      if (!b->idle()) after.push_back(b->tail());
    }
  } else if (synchronizesWithLegacy(s->kind())) {
    // ... and later work on a blocking stream waits for earlier legacy work.
    if (!c->legacy->idle()) after.push_back(c->legacy->tail());
  }
  Position p = s->enqueue(std::move(after), std::move(op));
  if (at) *at = p;
  return CUDA_SUCCESS;
}

CUresult submitAndWait(const std::shared_ptr<Stream>& s, std::function<void()> op) {
  Position done;
  if (CUresult r = submit(s, {}, std::move(op), &done); r != CUDA_SUCCESS) return r;
  done.wait();
  return CUDA_SUCCESS;
}

CUstreamCaptureMode& threadCaptureMode() {
  thread_local CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  return mode;
}

CUresult prohibitUnsafeCall() {
  Driver& d = driver();
  if (d.active_captures.load() == 0) return CUDA_SUCCESS;
  const CUstreamCaptureMode mode = threadCaptureMode();
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const std::thread::id self = std::this_thread::get_id();
  bool prohibited = false;
  std::lock_guard<std::mutex> lock(d.mu);
  for (auto& [stream, capture] : d.captures) {
    const bool own = capture.thread == self && capture.mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool global =
        mode == CU_STREAM_CAPTURE_MODE_GLOBAL && capture.mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || global) {
      prohibited = true;
      invalidateCapture(d, capture);
    }
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult prohibitOnCapturingStream(Stream* s) {
  Driver& d = driver();
  if (d.active_captures.load() == 0) return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.captures.find(s);
  if (it == d.captures.end()) return CUDA_SUCCESS;
  invalidateCapture(d, it->second);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

std::vector<Position> contextTails(Driver& d, Context* c) {
  std::vector<Position> tails;
  if (!c->alive) return tails;
  tails.push_back(c->legacy->tail());
  for (auto& s : c->streams) tails.push_back(s->tail());
  auto& retired = c->retired;
  for (auto it = retired.begin(); it != retired.end();) {
    if ((*it)->idle()) {
      it = retired.erase(it);
    } else {
      tails.push_back((*it)->tail());
      ++it;
    }
  }
  return tails;
}

std::vector<Position> deviceTails(Driver& d, int device) {
  std::vector<Position> tails;
  for (Context* c : d.contexts) {
    if (c->device != device || !c->alive) continue;
    auto more = contextTails(d, c);
    tails.insert(tails.end(), more.begin(), more.end());
  }
  return tails;
}

void waitAll(const std::vector<Position>& positions) {
  for (const Position& p : positions) p.wait();
}

void releasePoolsAboveThreshold(int device) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (device < 0 || device >= static_cast<int>(d.devices.size())) return;
  MemPool* pool = d.devices[device].pool;
  if (pool->reserved > pool->release_threshold) poolTrim(d, pool, pool->release_threshold);
}

uint64_t freeBytes(const Device& dev) {
  if (dev.other_processes_bytes >= dev.capacity) return 0;
  const uint64_t room = dev.capacity - dev.other_processes_bytes;
  return room > dev.live_bytes ? room - dev.live_bytes : 0;
}

bool chargeDevice(Device& dev, uint64_t bytes) {
  if (bytes > freeBytes(dev)) return false;
  dev.live_bytes += bytes;
  dev.live_allocations += 1;
  if (dev.live_bytes > dev.peak_bytes) dev.peak_bytes = dev.live_bytes;
  return true;
}

void creditDevice(Device& dev, uint64_t bytes) {
  dev.live_bytes -= bytes;
  dev.live_allocations -= 1;
}

size_t roundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void* mapMemory(size_t bytes, bool below_4g) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (below_4g) flags |= MAP_32BIT;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

const Allocation* findAllocation(Driver& d, uintptr_t addr) {
  auto it = d.allocations.upper_bound(addr);
  if (it == d.allocations.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  return addr < a.base + std::max<size_t>(a.size, 1) ? &a : nullptr;
}

bool isAccessible(Driver& d, uintptr_t addr, size_t bytes) {
  if (const Allocation* a = findAllocation(d, addr)) return addr + bytes <= a->base + a->size;
  // VMM: every byte must lie in an accessible mapping; mappings may be adjacent.
  while (bytes > 0) {
    auto it = d.mappings.upper_bound(addr);
    if (it == d.mappings.begin()) return false;
    --it;
    const uintptr_t end = it->first + it->second.size;
    if (addr >= end || !it->second.accessible) return false;
    const size_t here = std::min<size_t>(bytes, end - addr);
    addr += here;
    bytes -= here;
  }
  return true;
}

CUresult poolAllocate(Driver& d, MemPool* pool, Context* ctx, const std::shared_ptr<Stream>& s,
                      size_t bytes, CUdeviceptr* out) {
  const size_t need = roundUp(bytes, kAllocationAlignment);
  Allocation a;
  a.size = bytes;
  a.kind = MemoryKind::Async;
  a.ctx = ctx;
  a.device = pool->device;
  // Reuse a free block the stream may use now: freed by this stream, or its free already reached.
  for (auto it = pool->free_blocks.lower_bound(need);
       it != pool->free_blocks.end() && it->first <= 2 * need; ++it) {
    const FreeBlock& b = it->second;
    if (b.freed_at.stream != s && !b.freed_at.reached()) continue;
    a.base = b.base;
    a.accounted = b.accounted;
    a.mapped = b.mapped;
    pool->free_blocks.erase(it);
    break;
  }
  if (a.base == 0) {
    Device& dev = d.devices[pool->device];
    if (!chargeDevice(dev, need)) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = mapMemory(roundUp(need, getpagesize()));
    if (p == nullptr) {
      creditDevice(dev, need);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a.base = reinterpret_cast<uintptr_t>(p);
    a.accounted = need;
    a.mapped = roundUp(need, getpagesize());
    pool->reserved += need;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  }
  pool->used += a.accounted;
  pool->used_high = std::max(pool->used_high, pool->used);
  d.allocations[a.base] = a;
  *out = a.base;
  return CUDA_SUCCESS;
}

void poolTrim(Driver& d, MemPool* pool, uint64_t keep) {
  Device& dev = d.devices[pool->device];
  for (auto it = pool->free_blocks.begin();
       it != pool->free_blocks.end() && pool->reserved > keep;) {
    const FreeBlock& b = it->second;
    if (!b.freed_at.reached()) {  // queued work may still use it
      ++it;
      continue;
    }
    munmap(reinterpret_cast<void*>(b.base), b.mapped);
    pool->reserved -= b.accounted;
    creditDevice(dev, b.accounted);
    it = pool->free_blocks.erase(it);
  }
}

}  // namespace vramshim::fakecuda
