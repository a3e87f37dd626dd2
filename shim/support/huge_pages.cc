#include "shim/support/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace vramshim::support {

namespace {

size_t whole_pages(size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }

}  // namespace

void* map_huge_pages(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) throw std::bad_alloc();
  const size_t size = whole_pages(bytes);
  // Map a huge page more than needed and trim both ends to 2 MiB alignment: the kernel backs only
  // aligned 2 MiB ranges with huge pages.
  const size_t mapped = size + kHugePageBytes;
  void* memory = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(memory);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (aligned > start) munmap(memory, aligned - start);
  const uintptr_t end = start + mapped;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  // Advice only: without transparent huge pages the mapping keeps plain pages.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void unmap_huge_pages(void* memory, size_t bytes) { munmap(memory, whole_pages(bytes)); }

}  // namespace vramshim::support
