#include "shim/python/eval_frame_range.h"

#include <gtest/gtest.h>

#include "shim/python/unwind_extent.h"

namespace {

struct Seen {
  uintptr_t return_address = 0;  // of the call made on the rare path
  bool learnt = false;
};

// Rare path of split_eval_loop: learns the parts of `function` that hold `local`.
extern "C" __attribute__((noinline, cold)) void learn_on_rare_path(
    uintptr_t local, vramshim::python::EvalFrameRange* range, Seen* seen) {
  seen->return_address = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  seen->learnt = range->learn_parts_holding(&local, 1);
  asm volatile("" ::: "memory");
}

// Stands for _PyEval_EvalFrameDefault in a PGO build: GCC (-O2, -freorder-blocks-and-partition)
// moves the call to a cold function into an unnamed split_eval_loop.cold outside the symbol.
extern "C" __attribute__((noinline, visibility("default"))) int split_eval_loop(
    int rare, vramshim::python::EvalFrameRange* range, Seen* seen) {
  volatile int entry_frame = 1;  // a local, as the loop's entry frame is
  if (__builtin_expect(rare != 0, 0)) {
    learn_on_rare_path(reinterpret_cast<uintptr_t>(&entry_frame), range, seen);
  }
  return entry_frame;
}

}  // namespace

namespace vramshim::python {
namespace {

TEST(EvalFrameRangeTest, LearnsThePartThatHoldsAnEntryFrame) {
  EvalFrameRange range = EvalFrameRange::of_function(reinterpret_cast<void*>(split_eval_loop));
  ASSERT_TRUE(range.known()) << "split_eval_loop needs a dynamic symbol (-rdynamic)";
  Seen seen;
  split_eval_loop(1, &range, &seen);
  if (!seen.learnt && range.contains_return_address(seen.return_address)) {
    GTEST_SKIP() << "the compiler did not split split_eval_loop";
  }
  EXPECT_TRUE(seen.learnt);
  EXPECT_TRUE(range.contains_return_address(seen.return_address));
  const std::optional<CodeExtent> part = unwind_extent_of(seen.return_address - 1);
  ASSERT_TRUE(part.has_value());
  EXPECT_TRUE(range.contains_return_address(part->end));
  EXPECT_FALSE(range.contains_return_address(part->end + 1));

  Seen again;
  split_eval_loop(1, &range, &again);
  EXPECT_FALSE(again.learnt) << "the part is known already";
}

TEST(EvalFrameRangeTest, LearnsNothingOutsideTheFunctionsModule) {
  // A range whose function lies in libc: the frame holding this test's local is elsewhere.
  EvalFrameRange range = EvalFrameRange::of_function(reinterpret_cast<void*>(&abort));
  ASSERT_TRUE(range.known());
  volatile int local = 0;
  const uintptr_t locals[] = {reinterpret_cast<uintptr_t>(&local)};
  EXPECT_FALSE(range.learn_parts_holding(locals, 1));
  EXPECT_FALSE(EvalFrameRange().learn_parts_holding(locals, 1)) << "unknown function";
}

TEST(EvalFrameRangeTest, ReturnAddressesJustPastTheSymbolBelongToIt) {
  const EvalFrameRange range(0x5000, 0x6000);
  EXPECT_TRUE(range.contains_return_address(0x6000));
  EXPECT_FALSE(range.contains_return_address(0x5000));
  EXPECT_FALSE(EvalFrameRange().contains_return_address(0));
}

}  // namespace
}  // namespace vramshim::python
