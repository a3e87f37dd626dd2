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
  // Others hold more than the request but less than this process: this process's exhaustion, which
  // says what is held elsewhere.
  facts.pool_free_bytes = 0;
  EXPECT_EQ(judge(facts), Verdict::kExhaustion);
  EXPECT_EQ(describe(Verdict::kExhaustion, facts),
            "exhaustion by this process: it holds 70.0 GiB of the device (10.0 GiB more in use "
            "elsewhere: other processes, CUDA contexts)");
}

// On a GPU the process's own CUDA context and modules take hundreds of MiB no allocation call
// made: they were counted as another process's, so a process alone on its device, failing a request
// smaller than that, was told its memory was held elsewhere.
TEST(Verdict, ThisProcesssContextIsNotMemoryHeldElsewhere) {
  // Alone on a 16 GiB device: 15.5 GiB reserved, 500 MiB of context, 40 MiB asked.
  OutOfMemoryFacts facts = facts_of(40 * kMiB, 16 * kGiB, 12 * kMiB, 15 * kGiB + 512 * kMiB);
  facts.reserved_bytes -= 12 * kMiB;
  EXPECT_EQ(judge(facts), Verdict::kExhaustion) << describe(judge(facts), facts);
  // NVML's figure for this process counts its context: nothing is held elsewhere.
  facts.own_used_bytes = 16 * kGiB - 12 * kMiB;
  EXPECT_EQ(held_elsewhere_bytes(facts), 0u);
  EXPECT_EQ(describe(judge(facts), facts),
            "exhaustion by this process: it holds 15.5 GiB of the device");
  // Another process's 8 GiB beside a 7.5 GiB process: held elsewhere.
  facts.reserved_bytes = 7 * kGiB + 500 * kMiB;
  facts.own_used_bytes = 8 * kGiB - 12 * kMiB;
  EXPECT_EQ(judge(facts), Verdict::kHeldElsewhere);
  EXPECT_EQ(held_elsewhere_bytes(facts), 8 * kGiB);
}

TEST(Verdict, ARequestLargerThanTheDeviceIsTooLarge) {
  const OutOfMemoryFacts facts = facts_of(100 * kGiB, 80 * kGiB, 79 * kGiB, 100 * kMiB);
  EXPECT_EQ(judge(facts), Verdict::kTooLarge);
  EXPECT_EQ(describe(Verdict::kTooLarge, facts),
            "too large: 100.0 GiB is more than the device's 80.0 GiB in all");
}

// Within a capture the pool may not hand its free segments back to the driver, nor fence the
// blocks freed meanwhile, so a request it could have made room for fails: the verdict says so,
// with all it keeps (it named the free blocks alone: 2 MiB of 962 MiB held that way).
TEST(Verdict, ACaptureThatKeptTheCacheIsNamed) {
  OutOfMemoryFacts facts = facts_of(100 * kMiB, kGiB, 0, kGiB);
  facts.pool_free_bytes = 600 * kMiB;
  facts.pool_largest_free_block = 20 * kMiB;
  facts.cached_bytes = 960 * kMiB;  // 360 MiB freed during the capture
  facts.request.during_capture = true;
  EXPECT_EQ(describe(judge(facts), facts),
            "fragmentation: the pool holds 600.0 MiB free, but no free block of 100.0 MiB (the "
            "largest is 20.0 MiB); a stream capture was running, so the pool could not hand back "
            "its 960.0 MiB cached (free blocks, and blocks freed during the capture, which wait "
            "for its end)");
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
