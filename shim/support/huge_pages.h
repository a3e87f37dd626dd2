// Host memory in 2 MiB pages for the shim's largest tables (the pool's address table and Blocks).
// With hundreds of thousands of live allocations, a free's lookups miss the cache at addresses
// spread over tens of MiB, and with 4 KiB pages each miss is also a TLB miss whose page walk
// misses again; a 2 MiB page's translation covers 512 times as much (docs/design.md, "Working
// sets"). Small tables stay on the heap, so a process with few allocations pays nothing.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <new>

namespace vramshim::support {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` rounded up to whole huge pages, mapped 2 MiB-aligned and advised to the kernel as huge
// (transparent huge pages; where they are off, plain pages serve). Throws std::bad_alloc.
void* map_huge_pages(size_t bytes);
// Unmaps what map_huge_pages(bytes) mapped.
void unmap_huge_pages(void* memory, size_t bytes);

// Whether HugePageAllocator maps an array of `bytes` in huge pages: more than half of one.
inline bool in_huge_pages(size_t bytes) { return bytes > kHugePageBytes / 2; }

// A std::allocator for arrays that may grow large: arrays of more than half a huge page are mapped
// in whole huge pages, smaller ones come from the heap.
template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator

  T* allocate(size_t count) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    if (!in_huge_pages(count)) return std::allocator<T>().allocate(count);
    return static_cast<T*>(map_huge_pages(count * sizeof(T)));
  }
  void deallocate(T* memory, size_t count) {
    if (!in_huge_pages(count)) return std::allocator<T>().deallocate(memory, count);
    unmap_huge_pages(memory, count * sizeof(T));
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) { return false; }

 private:
  static bool in_huge_pages(size_t count) { return support::in_huge_pages(count * sizeof(T)); }
};

}  // namespace vramshim::support
