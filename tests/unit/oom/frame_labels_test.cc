// The labels the live views and the out-of-memory explanation give frames and sites.
#include "shim/oom/frame_labels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace vramshim::oom {
namespace {

// The stack that stands for the stacks past VRAMSHIM_STACK_TABLE is named so, as in the report,
// not by its frame's address.
TEST(FrameLabels, TheOverflowStackIsNamedAsInTheReport) {
  attribution::StackTable table(64 << 10);
  ::testing::internal::CaptureStderr();  // the table's one warning
  uint32_t overflow = UINT32_MAX;
  for (uint64_t seed = 0; seed < 10000 && overflow == UINT32_MAX; ++seed) {
    std::vector<uint64_t> frames(24);
    for (size_t i = 0; i < frames.size(); ++i) frames[i] = 0x400000 + seed * 4096 + i * 16;
    const uint32_t id = table.intern(frames.data(), static_cast<int>(frames.size()));
    if (table.past_budget_count() > 0) overflow = id;
  }
  ::testing::internal::GetCapturedStderr();
  ASSERT_NE(overflow, UINT32_MAX) << "the budget was never reached";
  EXPECT_EQ(site_label(table, nullptr, static_cast<int32_t>(overflow), FrameNames()),
            "stacks past VRAMSHIM_STACK_TABLE");
  EXPECT_EQ(frame_label(attribution::StackTable::kOverflowAddress, nullptr, FrameNames()),
            "stacks past VRAMSHIM_STACK_TABLE");
}

extern "C" void torch_label_fixture_frames(uint64_t frames[3]);

// A backward pass allocates on PyTorch's autograd threads: no Python line and no code of the
// user's in the stack, only LibTorch's. Its site is named by the autograd node that ran, else by
// the operator, not by the allocator every such stack starts with.
TEST(FrameLabels, AFrameworksOwnStackIsNamedByItsOperation) {
  uint64_t frames[3];
  torch_label_fixture_frames(frames);
  attribution::StackTable table(1 << 20);
  const auto node = static_cast<int32_t>(table.intern(frames, 3));
  const auto operator_only = static_cast<int32_t>(table.intern(frames, 2));
  const auto allocator_only = static_cast<int32_t>(table.intern(frames, 1));
  const FrameNames names(std::vector<uint64_t>(frames, frames + 3));
  EXPECT_EQ(site_label(table, nullptr, node, names),
            "torch::autograd::generated::SubBackward0::apply(unsigned long)");
  EXPECT_EQ(site_label(table, nullptr, operator_only, names), "at::_ops::neg::call(unsigned long)");
  EXPECT_EQ(site_label(table, nullptr, allocator_only, names),
            "c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)");
  // The mark of a stack cut at VRAMSHIM_STACK_DEPTH is no code of the user's.
  const uint64_t cut[] = {frames[0], frames[1], frames[2], attribution::StackTable::kCutAddress};
  const auto cut_stack = static_cast<int32_t>(table.intern(cut, 4));
  EXPECT_EQ(site_label(table, nullptr, cut_stack, names),
            "torch::autograd::generated::SubBackward0::apply(unsigned long)");
}

}  // namespace
}  // namespace vramshim::oom
