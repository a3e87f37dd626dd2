#include "shim/python/frames_holding.h"

#include <gtest/gtest.h>

#include <memory>

namespace vramshim::python {
namespace {

struct Found {
  uintptr_t holder_of_local = 0;
  uintptr_t return_into_holder = 0;
  uintptr_t holder_of_heap = 1;
};

__attribute__((noinline)) void find_from_callee(uintptr_t local, Found* found) {
  const auto heap = std::make_unique<int>(0);
  const uintptr_t addresses[] = {local, reinterpret_cast<uintptr_t>(heap.get())};
  uintptr_t holders[2];
  frames_holding(addresses, 2, holders);
  found->holder_of_local = holders[0];
  found->holder_of_heap = holders[1];
  found->return_into_holder = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  asm volatile("" ::: "memory");  // no tail call: this frame stays on the stack
}

// Keeps a local on its own part of the stack and asks, from a callee, which frame holds it.
__attribute__((noinline)) void hold_a_local(Found* found) {
  volatile int local = 7;
  find_from_callee(reinterpret_cast<uintptr_t>(&local), found);
  asm volatile("" ::: "memory");
}

TEST(FramesHoldingTest, ALocalIsHeldByTheFrameOfItsFunction) {
  Found found;
  hold_a_local(&found);
  EXPECT_NE(found.holder_of_local, 0u);
  EXPECT_EQ(found.holder_of_local, found.return_into_holder)
      << "the frame that holds the local returns into hold_a_local";
  EXPECT_EQ(found.holder_of_heap, 0u) << "a heap address is on no frame";
}

}  // namespace
}  // namespace vramshim::python
