// Exported entry points: virtual memory management. A physical allocation is a memfd; a reservation
// is a PROT_NONE range; cuMemMap maps the memfd there (MAP_SHARED|MAP_FIXED), still inaccessible
// until cuMemSetAccess, exactly as device memory is.
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace {

// Releases a physical allocation once it is released and no longer mapped (under d.mu).
void freePhysicalIfUnused(Driver& d,
                          std::map<CUmemGenericAllocationHandle, Physical>::iterator it) {
  const Physical& p = it->second;
  if (!p.released || p.mappings > 0) return;
  close(p.fd);
  creditDevice(d.devices[p.device], p.size);
  d.physicals.erase(it);
}

// The reservation containing [addr, addr + size), or end().
std::map<uintptr_t, size_t>::iterator reservationOf(Driver& d, uintptr_t addr, size_t size) {
  auto it = d.reservations.upper_bound(addr);
  if (it == d.reservations.begin()) return d.reservations.end();
  --it;
  return addr + size <= it->first + it->second ? it : d.reservations.end();
}

bool overlapsMapping(Driver& d, uintptr_t addr, size_t size) {
  auto it = d.mappings.lower_bound(addr);
  if (it != d.mappings.end() && it->first < addr + size) return true;
  if (it == d.mappings.begin()) return false;
  --it;
  return it->first + it->second.size > addr;
}

CUresult checkProp(const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  const int dev = prop->location.id;
  return dev >= 0 && dev < static_cast<int>(d.devices.size()) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  countCall(Entry::cuMemGetAllocationGranularity);
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  if (CUresult r = checkProp(prop); r != CUDA_SUCCESS) return r;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  countCall(Entry::cuMemCreate);
  if (handle == nullptr || flags != 0 || size == 0 || size % kVmmGranularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  if (CUresult r = checkProp(prop); r != CUDA_SUCCESS) return r;
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  const int dev = prop->location.id;
  Driver& d = driver();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!chargeDevice(d.devices[dev], size)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const int fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    std::lock_guard<std::mutex> lock(d.mu);
    creditDevice(d.devices[dev], size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard<std::mutex> lock(d.mu);
  const CUmemGenericAllocationHandle h = d.next_physical++;
  Physical& p = d.physicals[h];
  p.fd = fd;
  p.size = size;
  p.device = dev;
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  countCall(Entry::cuMemRelease);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.physicals.find(handle);
  if (it == d.physicals.end() || it->second.released) {
    d.errors.fetch_add(1);
    return CUDA_ERROR_INVALID_VALUE;
  }
  it->second.released = true;  // the memory lives on while mapped
  freePhysicalIfUnused(d, it);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  countCall(Entry::cuMemAddressReserve);
  if (ptr == nullptr || flags != 0 || size == 0 || size % kVmmGranularity != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  const size_t align = std::max(alignment, kVmmGranularity);
  // Over-reserve, then trim to an aligned range; `addr` is only a hint, as for the real driver.
  const size_t span = size + align;
  void* hint = reinterpret_cast<void*>(addr);
  void* raw = mmap(hint, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = roundUp(start, align);
  if (base > start) munmap(raw, base - start);
  const uintptr_t end = start + span;
  if (end > base + size) munmap(reinterpret_cast<void*>(base + size), end - (base + size));
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  d.reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  countCall(Entry::cuMemAddressFree);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.reservations.find(ptr);
  if (it == d.reservations.end() || it->second != size || overlapsMapping(d, ptr, size)) {
    d.errors.fetch_add(1);
    return CUDA_ERROR_INVALID_VALUE;
  }
  munmap(reinterpret_cast<void*>(ptr), size);
  d.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  countCall(Entry::cuMemMap);
  if (flags != 0 || size == 0 || size % kVmmGranularity != 0 || offset % kVmmGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  auto p = d.physicals.find(handle);
  if (p == d.physicals.end() || p->second.released || offset + size > p->second.size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (reservationOf(d, ptr, size) == d.reservations.end() || overlapsMapping(d, ptr, size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* at = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                  p->second.fd, static_cast<off_t>(offset));
  if (at == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  p->second.mappings += 1;
  d.mappings[ptr] = Mapping{size, handle, p->second.device, false};
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  countCall(Entry::cuMemUnmap);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  // The range must consist of whole mappings.
  std::vector<std::map<uintptr_t, Mapping>::iterator> covered;
  uintptr_t at = ptr;
  while (at < ptr + size) {
    auto it = d.mappings.find(at);
    if (it == d.mappings.end() || at + it->second.size > ptr + size)
      return CUDA_ERROR_INVALID_VALUE;
    covered.push_back(it);
    at += it->second.size;
  }
  if (covered.empty()) return CUDA_ERROR_INVALID_VALUE;
  // Back to a reserved, inaccessible range.
  mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  for (auto it : covered) {
    auto p = d.physicals.find(it->second.handle);
    d.mappings.erase(it);
    p->second.mappings -= 1;
    freePhysicalIfUnused(d, p);
  }
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  countCall(Entry::cuMemSetAccess);
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= static_cast<int>(d.devices.size())) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE) prot = PROT_READ;
  }
  // Every byte of the range must be mapped.
  std::vector<Mapping*> covered;
  uintptr_t at = ptr;
  while (at < ptr + size) {
    auto it = d.mappings.upper_bound(at);
    if (it == d.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
    --it;
    if (at >= it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
    covered.push_back(&it->second);
    at = it->first + it->second.size;
  }
  if (mprotect(reinterpret_cast<void*>(ptr), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
  for (Mapping* m : covered) m->accessible = prot != PROT_NONE;
  return CUDA_SUCCESS;
}

}  // extern "C"
