#include "shim/python/unwind_extent.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

namespace {

// A function with a dynamic symbol (the test links with -rdynamic) whose size dladdr1 gives.
extern "C" __attribute__((noinline, visibility("default"))) int unwind_extent_marker(int x) {
  return x * 3 + 1;
}

}  // namespace

namespace vramshim::python {
namespace {

TEST(UnwindExtentTest, AFunctionsEntryCoversExactlyItsSymbol) {
  Dl_info info;
  void* symbol_entry = nullptr;
  ASSERT_NE(
      dladdr1(reinterpret_cast<void*>(unwind_extent_marker), &info, &symbol_entry, RTLD_DL_SYMENT),
      0);
  const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
  ASSERT_NE(symbol, nullptr);
  const auto begin = reinterpret_cast<uintptr_t>(unwind_extent_marker);

  for (uintptr_t address : {begin, begin + symbol->st_size / 2, begin + symbol->st_size - 1}) {
    const std::optional<CodeExtent> extent = unwind_extent_of(address);
    ASSERT_TRUE(extent.has_value()) << std::hex << address;
    EXPECT_EQ(extent->begin, begin);
    EXPECT_EQ(extent->end, begin + symbol->st_size);
  }
}

TEST(UnwindExtentTest, FindsEntriesInSharedLibraries) {
  const auto address = reinterpret_cast<uintptr_t>(&dladdr1);  // in libc
  const std::optional<CodeExtent> extent = unwind_extent_of(address);
  ASSERT_TRUE(extent.has_value());
  EXPECT_LE(extent->begin, address);
  EXPECT_GT(extent->end, address);
}

TEST(UnwindExtentTest, NothingOutsideTheLoadedCode) {
  EXPECT_FALSE(unwind_extent_of(0x1000).has_value());
  int on_the_stack = 0;
  EXPECT_FALSE(unwind_extent_of(reinterpret_cast<uintptr_t>(&on_the_stack)).has_value());
}

}  // namespace
}  // namespace vramshim::python
