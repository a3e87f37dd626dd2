#include "shim/oom/verdict.h"

#include <gtest/gtest.h>

#include "shim/oom/explanation.h"

namespace vramshim::oom {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

OutOfMemoryFacts facts_of(uint64_t request, uint64_t total, uint64_t free, uint64_t reserved) {
  OutOfMemoryFacts facts;
  facts.request.bytes = request;
  facts.device_total_bytes = total;
  facts.device_free_bytes = free;
  facts.reserved_bytes = reserved;
  facts.in_use_bytes = reserved;
  return facts;
}

TEST(Verdict, ThisProcessHoldingTheDeviceIsExhaustion) {
  const OutOfMemoryFacts facts = facts_of(64 * kMiB, 80 * kGiB, 10 * kMiB, 80 * kGiB - 10 * kMiB);
  EXPECT_EQ(judge(facts), Verdict::kExhaustion);
  EXPECT_EQ(held_elsewhere_bytes(facts), 0u);
}

TEST(Verdict, FreeBytesInBlocksTooSmallAreFragmentation) {
  OutOfMemoryFacts facts = facts_of(4 * kGiB, 80 * kGiB, 0, 80 * kGiB);
  facts.pool_free_bytes = 6 * kGiB;
  facts.pool_largest_free_block = kGiB;
  EXPECT_EQ(judge(facts), Verdict::kFragmentation);
  EXPECT_EQ(describe(Verdict::kFragmentation, facts),
            "fragmentation: the pool holds 6.0 GiB free, but no free block of 4.0 GiB (the largest "
            "is 1.0 GiB)");
  facts.pool_largest_free_block = 4 * kGiB;  // a block would have served it: not fragmentation
  EXPECT_EQ(judge(facts), Verdict::kExhaustion);
}

TEST(Verdict, MemoryOthersHoldIsHeldElsewhere) {
  // 60 GiB used by others, 20 GiB by this process, a 1 GiB request.
  const OutOfMemoryFacts facts = facts_of(kGiB, 80 * kGiB, 0, 20 * kGiB);
  EXPECT_EQ(held_elsewhere_bytes(facts), 60 * kGiB);
  EXPECT_EQ(judge(facts), Verdict::kHeldElsewhere);
  EXPECT_EQ(describe(Verdict::kHeldElsewhere, facts),
            "memory held elsewhere: the device's used memory exceeds this process's by 60.0 GiB");
}

TEST(Verdict, FragmentationComesBeforeOthersWhenThisProcessHoldsMore) {
  OutOfMemoryFacts facts = facts_of(2 * kGiB, 80 * kGiB, 0, 70 * kGiB);  // others: 10 GiB
  facts.pool_free_bytes = 5 * kGiB;
  facts.pool_largest_free_block = kGiB;
  EXPECT_EQ(judge(facts), Verdict::kFragmentation);
  facts.pool_free_bytes = 0;
  EXPECT_EQ(judge(facts), Verdict::kHeldElsewhere);  // others still hold more than the request
}

TEST(Verdict, TheLimitAndTooLargeComeFirst) {
  OutOfMemoryFacts facts = facts_of(kGiB, 80 * kGiB, 0, 20 * kGiB);
  facts.request.cause = pool::OutOfMemoryCause::kLimit;
  facts.limit_bytes = 20 * kGiB;
  EXPECT_EQ(judge(facts), Verdict::kLimit);
  facts.request.cause = pool::OutOfMemoryCause::kTooLarge;
  EXPECT_EQ(judge(facts), Verdict::kTooLarge);
}

TEST(Verdict, WithoutTheDriversFiguresNothingIsHeldElsewhere) {
  OutOfMemoryFacts facts = facts_of(kGiB, 0, 0, 0);
  facts.device_total_bytes.reset();
  facts.device_free_bytes.reset();
  EXPECT_EQ(held_elsewhere_bytes(facts), 0u);
  EXPECT_EQ(judge(facts), Verdict::kExhaustion);
}

TEST(Explanation, EveryLineIsPrefixedAndTheBlockSaysWhatItStandsFor) {
  OutOfMemoryFacts facts = facts_of(64 * kMiB, kGiB, 0, kGiB);
  facts.failures = 3;
  facts.leading_sites.push_back({0, attribution::AllocationKind::kDevice, kGiB, 16});
  facts.other_processes.push_back({4343, "python serve.py", "vramshim", kGiB, 0, std::nullopt});
  facts.unasked.push_back("libnvidia-ml.so.1 is not installed");
  ExplanationLabels labels;
  labels.leading_sites = {"train.py:57 forward"};
  labels.failing_frames = {"hold_everything", "main"};
  labels.report_path = "/tmp/mem.oom.json";
  const std::string block = explain(facts, labels);
  size_t lines = 0;
  for (size_t at = 0; at < block.size(); at = block.find('\n', at) + 1) {
    EXPECT_EQ(block.compare(at, 10, "vramshim: "), 0) << block.substr(at, 40);
    ++lines;
  }
  EXPECT_GE(lines, 10u);
  EXPECT_NE(block.find("(this block stands for 3 failures since the last one)"), std::string::npos);
  EXPECT_NE(block.find("1.0 GiB in 16 allocations  train.py:57 forward"), std::string::npos);
  EXPECT_NE(block.find("pid 4343 python serve.py: 1.0 GiB in use, 0 B cached (vramshim)"),
            std::string::npos)
      << block;
  EXPECT_NE(block.find("(libnvidia-ml.so.1 is not installed)"), std::string::npos);
  EXPECT_NE(block.find("report: /tmp/mem.oom.json"), std::string::npos);
}

}  // namespace
}  // namespace vramshim::oom
