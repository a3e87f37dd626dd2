#include "shim/attribution/stack_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace vramshim::attribution {
namespace {

std::vector<uint64_t> synthetic_stack(uint64_t seed, int depth) {
  std::vector<uint64_t> frames(depth);
  for (int i = 0; i < depth; ++i) frames[i] = 0x400000 + (seed * 7 + i) % 997 * 16;
  return frames;
}

TEST(StackTable, SameFramesSameIdAndFramesShareIds) {
  StackTable table;
  const std::vector<uint64_t> a = {0x10, 0x20, 0x30};
  const std::vector<uint64_t> b = {0x10, 0x20, 0x40};
  const uint32_t id_a = table.intern(a.data(), 3);
  const uint32_t id_b = table.intern(b.data(), 3);
  EXPECT_NE(id_a, id_b);
  EXPECT_EQ(table.intern(a.data(), 3), id_a);
  EXPECT_NE(table.intern(a.data(), 2), id_a);  // a prefix is another stack
  EXPECT_EQ(table.stack_count(), 3u);
  EXPECT_EQ(table.frame_count(), 4u);
  const StackTable::Frames frames = table.frames_of(id_b);
  ASSERT_EQ(frames.depth, 3u);
  EXPECT_EQ(table.frame_address(frames.frame_ids[2]), 0x40u);
  EXPECT_EQ(frames.frame_ids[0], table.frames_of(id_a).frame_ids[0]);
}

// A lookup compares whole stacks of return addresses: the same frames in another order, one frame
// changed anywhere, or every depth of one stack make distinct stacks, found again after the table
// has grown.
TEST(StackTable, StacksDifferingInOrderInOneFrameOrInDepthAreDistinct) {
  StackTable table;
  constexpr int kDepth = 40;
  const std::vector<uint64_t> base = synthetic_stack(1, kDepth);
  std::vector<std::vector<uint64_t>> stacks;
  for (int i = 0; i < kDepth; ++i) {
    if (i + 1 < kDepth) {
      std::vector<uint64_t> swapped = base;
      std::swap(swapped[i], swapped[i + 1]);
      stacks.push_back(swapped);
    }
    for (uint64_t delta = 1; delta <= 16; ++delta) {  // 640 stacks in all: the table grows
      std::vector<uint64_t> changed = base;
      changed[i] += 8 * delta;
      stacks.push_back(changed);
    }
  }
  for (int depth = 1; depth <= kDepth; ++depth) {
    stacks.emplace_back(base.begin(), base.begin() + depth);
  }
  std::vector<uint32_t> ids;
  for (const std::vector<uint64_t>& stack : stacks) {
    ids.push_back(table.intern(stack.data(), static_cast<int>(stack.size())));
  }
  ASSERT_EQ(table.stack_count(), stacks.size());
  for (size_t s = 0; s < stacks.size(); ++s) {
    EXPECT_EQ(ids[s], s);
    EXPECT_EQ(table.intern(stacks[s].data(), static_cast<int>(stacks[s].size())), ids[s]);
  }
}

TEST(StackTable, ConcurrentInterningGivesEveryStackOneDenseId) {
  StackTable table;
  constexpr int kStacks = 20000;
  constexpr int kThreads = 8;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int s = 0; s < kStacks; ++s) {
        // Strides coprime to kStacks: each thread visits every stack, in its own order.
        static constexpr int kStrides[kThreads] = {1, 3, 7, 9, 11, 13, 17, 19};
        const int which = static_cast<int>((int64_t{s} * kStrides[t]) % kStacks);
        const std::vector<uint64_t> frames = synthetic_stack(which, 1 + which % 40);
        ids[t][which] = table.intern(frames.data(), static_cast<int>(frames.size()));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(table.stack_count(), static_cast<size_t>(kStacks));
  for (int s = 0; s < kStacks; ++s) {
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(ids[t][s], ids[0][s]) << s;
    const std::vector<uint64_t> expected = synthetic_stack(s, 1 + s % 40);
    const StackTable::Frames frames = table.frames_of(ids[0][s]);
    ASSERT_EQ(frames.depth, expected.size());
    for (uint32_t i = 0; i < frames.depth; ++i) {
      ASSERT_EQ(table.frame_address(frames.frame_ids[i]), expected[i]);
    }
  }
  EXPECT_LE(table.frame_count(), 997u);
}

// Past its budget the table interns no new stack: each gets the overflow stack, one frame at
// kOverflowAddress, counted; stacks interned before are still found; one warning line in all.
TEST(StackTable, NewStacksPastTheBudgetShareTheOverflowStack) {
  constexpr size_t kBudget = 64 << 10;
  StackTable table(kBudget);
  constexpr int kDepth = 24;
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<uint32_t> ids;
  ::testing::internal::CaptureStderr();
  uint32_t overflow = UINT32_MAX;
  for (uint64_t seed = 0; seed < 10000 && overflow == UINT32_MAX; ++seed) {
    std::vector<uint64_t> frames(kDepth);
    for (int i = 0; i < kDepth; ++i) frames[i] = 0x400000 + seed * 4096 + i * 16;
    const uint32_t id = table.intern(frames.data(), kDepth);
    if (table.past_budget_count() > 0) {
      overflow = id;
    } else {
      stacks.push_back(frames);
      ids.push_back(id);
    }
  }
  ASSERT_NE(overflow, UINT32_MAX) << "the budget was never reached";
  EXPECT_GT(stacks.size(), 10u);
  const StackTable::Frames frames = table.frames_of(overflow);
  ASSERT_EQ(frames.depth, 1u);
  EXPECT_EQ(table.frame_address(frames.frame_ids[0]), StackTable::kOverflowAddress);
  EXPECT_EQ(table.frame_module(frames.frame_ids[0]), -1);

  const size_t stack_count = table.stack_count();
  for (uint64_t seed = 20000; seed < 20100; ++seed) {
    std::vector<uint64_t> fresh(kDepth);
    for (int i = 0; i < kDepth; ++i) fresh[i] = 0x400000 + seed * 4096 + i * 16;
    EXPECT_EQ(table.intern(fresh.data(), kDepth), overflow);
  }
  for (size_t s = 0; s < stacks.size(); ++s) {
    EXPECT_EQ(table.intern(stacks[s].data(), kDepth), ids[s]);
  }
  EXPECT_EQ(table.stack_count(), stack_count);
  EXPECT_EQ(table.past_budget_count(), 101u);
  EXPECT_EQ(table.budget_bytes(), kBudget);

  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_NE(warnings.find("VRAMSHIM_STACK_TABLE"), std::string::npos) << warnings;
}

// What the table holds stays near its budget however many stacks it is offered: the budget, the
// arenas' first chunks and the address index's buckets.
TEST(StackTable, MemoryStaysBoundedByTheBudget) {
  constexpr size_t kBudget = 1 << 20;
  StackTable table(kBudget);
  ::testing::internal::CaptureStderr();
  for (uint64_t seed = 0; seed < 100000; ++seed) {
    std::vector<uint64_t> frames(24);
    for (int i = 0; i < 24; ++i) frames[i] = 0x400000 + seed * 4096 + i * 16;
    table.intern(frames.data(), 24);
  }
  ::testing::internal::GetCapturedStderr();
  EXPECT_LT(table.stack_count(), 100000u);
  EXPECT_LT(table.memory_bytes(), kBudget + (512 << 10));
}

}  // namespace
}  // namespace vramshim::attribution
