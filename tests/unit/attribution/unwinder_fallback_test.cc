// VRAMSHIM_TEST_NO_LIBUNWIND=1 forces the libgcc fallback, which still captures the caller's stack.
#include <gtest/gtest.h>

#include <cstdlib>

#include "shim/attribution/stack_capture.h"

namespace vramshim::attribution {
namespace {

TEST(UnwinderFallback, ForcedOffLibunwindFallsBackToLibgcc) {
  // This binary's first call to preferred_unwinder(): the variable is read here, once.
  ASSERT_EQ(setenv("VRAMSHIM_TEST_NO_LIBUNWIND", "1", 1), 0);
  EXPECT_EQ(preferred_unwinder(), Unwinder::kLibgcc);
  const StackCapture capture(16, Unwinder::kLibunwind, {});
  EXPECT_EQ(capture.unwinder(), Unwinder::kLibgcc);
  StackCapture::Buffer buffer;
  EXPECT_GE(capture.capture(buffer).depth, 3);
}

}  // namespace
}  // namespace vramshim::attribution
