#include "shim/support/huge_pages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace vramshim::support {
namespace {

bool aligned_to_huge_page(const void* memory) {
  return reinterpret_cast<uintptr_t>(memory) % kHugePageBytes == 0;
}

// The VmFlags line of the mapping that holds `address` (/proc/self/smaps), "" if none.
std::string mapping_flags(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = start <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool kernel_has_transparent_huge_pages() {
  return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

TEST(HugePageAllocator, ArraysOverHalfAHugePageAreMappedInHugePages) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> large(kHugePageBytes / 2 / 8 + 1, 7);
  EXPECT_TRUE(aligned_to_huge_page(large.data()));
  if (kernel_has_transparent_huge_pages()) {
    // madvise(MADV_HUGEPAGE) marks the mapping "hg".
    EXPECT_NE(mapping_flags(large.data()).find(" hg"), std::string::npos)
        << mapping_flags(large.data());
  }
  for (uint64_t value : large) ASSERT_EQ(value, 7u);
}

TEST(HugePageAllocator, SmallArraysStayOnTheHeap) {
  std::vector<uint64_t, HugePageAllocator<uint64_t>> small(kHugePageBytes / 2 / 8);
  if (kernel_has_transparent_huge_pages()) {
    EXPECT_EQ(mapping_flags(small.data()).find(" hg"), std::string::npos);
  }
}

TEST(HugePageAllocator, GrowingKeepsTheContentsAcrossTheThreshold) {
  std::vector<uint32_t, HugePageAllocator<uint32_t>> values;
  for (uint32_t i = 0; i < 3 * kHugePageBytes / 4; ++i) values.push_back(i);  // 3 huge pages
  EXPECT_TRUE(aligned_to_huge_page(values.data()));
  for (uint32_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], i);
  values.clear();
  values.shrink_to_fit();  // unmaps: a leak would show under the sanitizers' builds
  EXPECT_EQ(values.capacity(), 0u);
}

TEST(HugePageAllocator, ImpossibleSizesThrowBadAlloc) {
  HugePageAllocator<uint64_t> allocator;
  EXPECT_THROW(allocator.allocate(SIZE_MAX / 4), std::bad_alloc);
  EXPECT_THROW(allocator.allocate(size_t{1} << 60), std::bad_alloc);
}

}  // namespace
}  // namespace vramshim::support
