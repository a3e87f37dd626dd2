// Exported entry points: device, pitched, managed and pinned host memory, memory info, pointer
// attributes and the stream-ordered allocator with its default pools.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"
#include "tests/fakecuda/simulated_delay.h"

using namespace vramshim::fakecuda;

namespace {

constexpr size_t kPitchAlignment = 512;

// Device memory (device and pitched kinds): charged against the capacity of the context's device.
CUresult allocateDevice(size_t bytes, size_t accounted, MemoryKind kind, bool below_4g,
                        CUdeviceptr* out) {
  delayMicros(g_alloc_delay_us.load(std::memory_order_relaxed));
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!chargeDevice(d.devices[c->device], accounted)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const size_t mapped = roundUp(accounted, getpagesize());
  void* p = mapMemory(mapped, below_4g);
  std::lock_guard<std::mutex> lock(d.mu);
  if (p == nullptr) {
    creditDevice(d.devices[c->device], accounted);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = bytes;
  a.accounted = accounted;
  a.mapped = mapped;
  a.kind = kind;
  a.ctx = c;
  a.device = c->device;
  d.allocations[a.base] = a;
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult allocatePitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                       unsigned element_size, bool below_4g) {
  if (dptr == nullptr || pitch == nullptr || width == 0 || height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (element_size != 4 && element_size != 8 && element_size != 16) return CUDA_ERROR_INVALID_VALUE;
  *pitch = roundUp(width, kPitchAlignment);
  const size_t bytes = *pitch * height;
  return allocateDevice(bytes, bytes, MemoryKind::Pitched, below_4g, dptr);
}

// cuMemFree: like the real driver, waits for all work queued on the device first.
CUresult freeDevice(CUdeviceptr dptr) {
  delayMicros(g_alloc_delay_us.load(std::memory_order_relaxed));
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  Driver& d = driver();
  std::vector<Position> tails;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    const auto it = d.allocations.find(dptr);
    if (it != d.allocations.end()) tails = deviceTails(d, it->second.device);
  }
  waitAll(tails);
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    const auto it = d.allocations.find(dptr);
    if (it == d.allocations.end() || it->second.kind == MemoryKind::Host) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_VALUE;
    }
    a = it->second;
    d.allocations.erase(it);
    if (a.kind == MemoryKind::Async) {
      MemPool* pool = d.devices[a.device].pool;
      pool->used -= a.accounted;
      pool->reserved -= a.accounted;
    }
    if (a.kind != MemoryKind::Managed) creditDevice(d.devices[a.device], a.accounted);
  }
  munmap(reinterpret_cast<void*>(a.base), a.mapped);
  return CUDA_SUCCESS;
}

// Managed and pinned host memory: host mappings that belong to the context, not charged to the
// device.
CUresult allocateUncharged(size_t bytes, MemoryKind kind, uintptr_t* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  const size_t mapped = roundUp(bytes, getpagesize());
  void* p = mapMemory(mapped);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.base = reinterpret_cast<uintptr_t>(p);
  a.size = bytes;
  a.accounted = roundUp(bytes, kAllocationAlignment);
  a.mapped = mapped;
  a.kind = kind;
  a.ctx = c;
  a.device = c->device;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  d.allocations[a.base] = a;
  *out = a.base;
  return CUDA_SUCCESS;
}

CUresult memoryInfo(size_t* free_bytes, size_t* total_bytes) {
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  const Device& dev = d.devices[c->device];
  *total_bytes = dev.capacity;
  *free_bytes = freeBytes(dev);
  return CUDA_SUCCESS;
}

CUresult allocateAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool_handle, CUstream hStream,
                       bool per_thread) {
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = s->context();
  if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  MemPool* pool = d.devices[c->device].pool;
  if (pool_handle != nullptr) {
    pool = reinterpret_cast<MemPool*>(pool_handle);
    if (!d.pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  }
  // A captured allocation is made at capture time (the simulation has no graph launch).
  if (auto it = d.captures.find(s.get()); it != d.captures.end()) it->second.operations += 1;
  return poolAllocate(d, pool, c, s, bytes, dptr);
}

CUresult freeAsync(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    const auto it = d.allocations.find(dptr);
    if (it == d.allocations.end() || it->second.kind != MemoryKind::Async) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_VALUE;
    }
    a = it->second;
    d.allocations.erase(it);
  }
  // The block returns to the pool once the stream reaches this point.
  Position freed_at;
  if (CUresult r = submit(s, {}, nullptr, &freed_at); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(d.mu);
  MemPool* pool = d.devices[a.device].pool;
  pool->used -= a.accounted;
  pool->free_blocks.emplace(a.accounted, FreeBlock{a.base, a.accounted, a.mapped, freed_at});
  return CUDA_SUCCESS;
}

CUresult checkPool(CUmemoryPool pool_handle, MemPool** out) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto* pool = reinterpret_cast<MemPool*>(pool_handle);
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  *out = pool;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  countCall(Entry::cuMemAlloc);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  const CUresult r = allocateDevice(bytesize, roundUp(bytesize, kAllocationAlignment),
                                    MemoryKind::Device, true, &p);
  if (r == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(p);
  return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  countCall(Entry::cuMemAlloc_v2);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocateDevice(bytesize, roundUp(bytesize, kAllocationAlignment), MemoryKind::Device,
                        false, dptr);
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  countCall(Entry::cuMemAllocPitch);
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  size_t pitch = 0;
  const CUresult r = allocatePitch(&p, &pitch, WidthInBytes, Height, ElementSizeBytes, true);
  if (r == CUDA_SUCCESS) {
    *dptr = static_cast<CUdeviceptr_v1>(p);
    *pPitch = static_cast<unsigned int>(pitch);
  }
  return r;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  countCall(Entry::cuMemAllocPitch_v2);
  return allocatePitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes, false);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  countCall(Entry::cuMemFree);
  return freeDevice(dptr);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  countCall(Entry::cuMemFree_v2);
  return freeDevice(dptr);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  countCall(Entry::cuMemAllocManaged);
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  const CUresult r = allocateUncharged(bytesize, MemoryKind::Managed, &p);
  if (r == CUDA_SUCCESS) *dptr = p;
  return r;
}

CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  countCall(Entry::cuMemAllocHost);
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  const CUresult r = allocateUncharged(bytesize, MemoryKind::Host, &p);
  if (r == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
  return r;
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  countCall(Entry::cuMemAllocHost_v2);
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  const CUresult r = allocateUncharged(bytesize, MemoryKind::Host, &p);
  if (r == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
  return r;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  countCall(Entry::cuMemHostAlloc);
  constexpr unsigned kKnown =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (pp == nullptr || (Flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = 0;
  const CUresult r = allocateUncharged(bytesize, MemoryKind::Host, &p);
  if (r == CUDA_SUCCESS) *pp = reinterpret_cast<void*>(p);
  return r;
}

CUresult cuMemFreeHost(void* p) {
  countCall(Entry::cuMemFreeHost);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    const auto it = d.allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == d.allocations.end() || it->second.kind != MemoryKind::Host) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_VALUE;
    }
    a = it->second;
    d.allocations.erase(it);
  }
  munmap(reinterpret_cast<void*>(a.base), a.mapped);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  countCall(Entry::cuMemGetInfo);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t f = 0, t = 0;
  const CUresult r = memoryInfo(&f, &t);
  if (r == CUDA_SUCCESS) {
    *free = static_cast<unsigned int>(std::min<size_t>(f, 0xffffffffu));
    *total = static_cast<unsigned int>(std::min<size_t>(t, 0xffffffffu));
  }
  return r;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  countCall(Entry::cuMemGetInfo_v2);
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return memoryInfo(free, total);
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  countCall(Entry::cuMemGetAddressRange_v2);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  const Allocation* a = findAllocation(d, dptr);
  if (a == nullptr || a->kind == MemoryKind::Host) return CUDA_ERROR_NOT_FOUND;
  if (pbase) *pbase = a->base;
  if (psize) *psize = a->size;
  return CUDA_SUCCESS;
}

// As the driver: the handle names the whole allocation holding the pointer (here by its start, in
// the handle's first bytes), which cuIpcOpenMemHandle would map and answer the start of.
CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  countCall(Entry::cuIpcGetMemHandle);
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  const Allocation* a = findAllocation(d, dptr);
  if (a == nullptr || (a->kind != MemoryKind::Device && a->kind != MemoryKind::Pitched)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pHandle = CUipcMemHandle{};
  std::memcpy(pHandle->reserved, &a->base, sizeof a->base);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  countCall(Entry::cuPointerGetAttribute);
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Allocation found;
  if (const Allocation* a = findAllocation(d, ptr)) {
    found = *a;
  } else {
    // A VMM mapping: no context, device memory of the handle's device.
    auto it = d.mappings.upper_bound(ptr);
    if (it == d.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --it;
    if (ptr >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
    found.base = it->first;
    found.size = it->second.size;
    found.device = it->second.device;
  }
  const bool host = found.kind == MemoryKind::Host;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(found.ctx);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host && found.kind != MemoryKind::Managed) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<bool*>(data) = found.kind == MemoryKind::Managed;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = found.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = found.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = found.size;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  countCall(Entry::cuMemAllocAsync);
  return allocateAsync(dptr, bytesize, nullptr, hStream, false);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  countCall(Entry::cuMemAllocAsync_ptsz);
  return allocateAsync(dptr, bytesize, nullptr, hStream, true);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  countCall(Entry::cuMemAllocFromPoolAsync);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocateAsync(dptr, bytesize, pool, hStream, false);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  countCall(Entry::cuMemAllocFromPoolAsync_ptsz);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocateAsync(dptr, bytesize, pool, hStream, true);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  countCall(Entry::cuMemFreeAsync);
  return freeAsync(dptr, hStream, false);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  countCall(Entry::cuMemFreeAsync_ptsz);
  return freeAsync(dptr, hStream, true);
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  countCall(Entry::cuDeviceGetDefaultMemPool);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (dev < 0 || dev >= static_cast<int>(d.devices.size())) return CUDA_ERROR_INVALID_DEVICE;
  *pool_out = reinterpret_cast<CUmemoryPool>(d.devices[dev].pool);
  return CUDA_SUCCESS;
}

// Only the default pool exists (no cuMemPoolCreate / cuDeviceSetMemPool), so it is also the current
// one.
CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  countCall(Entry::cuDeviceGetMemPool);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (dev < 0 || dev >= static_cast<int>(d.devices.size())) return CUDA_ERROR_INVALID_DEVICE;
  *pool = reinterpret_cast<CUmemoryPool>(d.devices[dev].pool);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  countCall(Entry::cuMemPoolTrimTo);
  MemPool* p = nullptr;
  if (CUresult r = checkPool(pool, &p); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  poolTrim(d, p, minBytesToKeep);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  countCall(Entry::cuMemPoolSetAttribute);
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemPool* p = nullptr;
  if (CUresult r = checkPool(pool, &p); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = *static_cast<cuuint64_t*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      p->reserved_high = p->reserved;  // only resetting to the current value is allowed
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      p->used_high = p->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      return CUDA_SUCCESS;  // reuse policies: the simulation reuses only in stream order
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  countCall(Entry::cuMemPoolGetAttribute);
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemPool* p = nullptr;
  if (CUresult r = checkPool(pool, &p); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = p->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = p->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = p->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = p->used_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // extern "C"
