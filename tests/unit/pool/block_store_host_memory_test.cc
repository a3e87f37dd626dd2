// A new segment recorded while the host's memory runs out: the store is left exactly as it was,
// so that the pool can hand the segment back to the driver with no block of it left anywhere
// (CachingPool::grow). Every allocation add_segment_and_take makes is failed in turn.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "shim/pool/block_store.h"

namespace {

// Allocations left before the one that fails; negative: none fails.
long g_allocations_before_failure = -1;

}  // namespace

// The whole test program's allocations, failing on demand.
void* operator new(size_t size) {
  if (g_allocations_before_failure == 0) throw std::bad_alloc();
  if (g_allocations_before_failure > 0) --g_allocations_before_failure;
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }

namespace vramshim::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Adds a segment with every allocation it makes failed in turn, checking after each failure that
// the store is as it was; returns how many failures it went through.
int add_failing_in_turn(BlockStore& store, CUdeviceptr base) {
  int failures = 0;
  for (long fail_at = 0;; ++fail_at) {
    const size_t reserved = store.reserved_bytes();
    const size_t free = store.free_bytes();
    g_allocations_before_failure = fail_at;
    Block* block = nullptr;
    try {
      block = store.add_segment_and_take(base, 2 * kMiB, 4096);
    } catch (const std::bad_alloc&) {
    }
    g_allocations_before_failure = -1;
    if (block != nullptr) return failures;  // past every allocation it makes
    ++failures;
    EXPECT_EQ(store.reserved_bytes(), reserved) << "failed at allocation " << fail_at;
    EXPECT_EQ(store.free_bytes(), free) << "failed at allocation " << fail_at;
    EXPECT_FALSE(store.holds(base + 4096)) << "failed at allocation " << fail_at;
    EXPECT_EQ(store.find(base), nullptr) << "failed at allocation " << fail_at;
    // No block of the failed segment is handed out later.
    if (Block* taken = store.take(2 * kMiB - 4096)) {
      EXPECT_FALSE(taken->ptr >= base && taken->ptr < base + 2 * kMiB)
          << "failed at allocation " << fail_at;
      store.retire(taken->ptr);
      store.make_free(taken);
    }
    if (fail_at > 100) {
      ADD_FAILURE() << "add_segment_and_take never succeeds";
      return failures;
    }
  }
}

TEST(BlockStoreHostMemory, AFailedSegmentLeavesTheStoreAsItWas) {
  BlockStore store{SizePolicy()};
  // 300 segments, through the growths of the address table (at 12, 24, 48, 96 and 192 entries)
  // and of the Blocks' chunks; at least the segment's own entry needs memory every time.
  int failures = 0;
  for (CUdeviceptr base = 0x100000000; base < 0x100000000 + 300 * 4 * kMiB; base += 4 * kMiB) {
    failures += add_failing_in_turn(store, base);
  }
  EXPECT_GE(failures, 300);
}

}  // namespace
}  // namespace vramshim::pool
