// Replaying traces: free ranges, the recording allocator's figures, and the pool's figures for each
// policy, on traces small enough to know the answers.
#include "analyzer/replay/pool_replay.h"

#include <gtest/gtest.h>

#include "analyzer/replay/free_ranges.h"
#include "analyzer/replay/recorded_figures.h"
#include "analyzer/replay/replay_device.h"
#include "analyzer/replay/replay_policy.h"

namespace vramshim::analyzer {
namespace {

using Action = AllocationEvent::Action;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBase = 0x10000000;

DeviceTrace trace_of(std::vector<AllocationEvent> events) {
  DeviceTrace trace;
  for (const AllocationEvent& event : events) {
    trace.allocations += event.action == Action::kAllocate;
    trace.frees += event.action == Action::kFree;
    trace.records_reservations |= event.action == Action::kReserve;
  }
  trace.events = std::move(events);
  return trace;
}

TEST(FreeRanges, AreTheGapsBetweenAllocationsWithinEachSegment) {
  const FreeRanges ranges = free_ranges({{0, 100}, {1000, 50}}, {{10, 20}, {50, 10}, {1000, 50}});
  EXPECT_EQ(ranges.free_bytes, 10u + 20u + 40u);
  EXPECT_EQ(ranges.largest_bytes, 40u);
  EXPECT_DOUBLE_EQ(*ranges.fragmentation(), 1.0 - 40.0 / 70.0);
  EXPECT_FALSE(free_ranges({{0, 100}}, {{0, 100}}).fragmentation());
  EXPECT_EQ(*free_ranges({{0, 100}}, {}).fragmentation(), 0.0);
}

// PyTorch's figures from its segment events: a 2 MiB segment, then a 20 MiB one while 1.5 KiB and
// then 4 MiB are in use.
TEST(RecordedFigures, FollowTheTracesReservations) {
  const DeviceTrace trace = trace_of({
      {Action::kReserve, kBase, 2 * kMiB},
      {Action::kAllocate, kBase, 1000},
      {Action::kAllocate, kBase + 1024, 500},
      {Action::kFree, kBase, 1000},
      {Action::kReserve, kBase + 4 * kMiB, 20 * kMiB},
      {Action::kAllocate, kBase + 4 * kMiB, 4 * kMiB},
      {Action::kFree, kBase + 4 * kMiB, 4 * kMiB},
      {Action::kRelease, kBase + 4 * kMiB, 20 * kMiB},
  });
  const MemoryFigures figures = recorded_figures(trace);
  EXPECT_EQ(figures.peak_reserved_bytes, 22 * kMiB);
  EXPECT_EQ(figures.peak_in_use_bytes, 4 * kMiB + 512);
  EXPECT_EQ(figures.driver_alloc_calls, 2u);
  EXPECT_EQ(figures.driver_free_calls, 1u);
  ASSERT_TRUE(figures.at_peak);
  // Right after the 4 MiB allocation: the small segment's 2 MiB - 512 B (in two ranges, around
  // the live 500 B) plus the large one's 16 MiB.
  EXPECT_EQ(figures.at_peak->free_bytes, 2 * kMiB - 512 + 16 * kMiB);
  EXPECT_EQ(figures.at_peak->largest_bytes, 16 * kMiB);
  EXPECT_FALSE(figures.ns_per_operation);
}

// Ten 100 KiB tensors allocated and freed in turn, twice: one 2 MiB segment serves them all.
DeviceTrace small_tensors() {
  std::vector<AllocationEvent> events;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < 10; ++i) events.push_back({Action::kAllocate, kBase + i, 100 << 10});
    for (uint64_t i = 0; i < 10; ++i) events.push_back({Action::kFree, kBase + i, 100 << 10});
  }
  return trace_of(std::move(events));
}

TEST(PoolReplay, DefaultPoolServesSmallTensorsFromOneSegment) {
  const MemoryFigures figures =
      replay_through_pool(small_tensors(), parse_replay_policy("default").options, 2);
  EXPECT_EQ(figures.peak_in_use_bytes, 10u * (100 << 10));
  EXPECT_EQ(figures.peak_reserved_bytes, 2 * kMiB);
  EXPECT_EQ(figures.driver_alloc_calls, 1u);
  EXPECT_EQ(figures.driver_free_calls, 0u);
  ASSERT_TRUE(figures.at_peak);
  // After the first allocation: the rest of the segment, one range.
  EXPECT_EQ(figures.at_peak->free_bytes, 2 * kMiB - (100 << 10));
  EXPECT_EQ(*figures.at_peak->fragmentation(), 0.0);
  ASSERT_TRUE(figures.ns_per_operation);
  EXPECT_GT(*figures.ns_per_operation, 0.0);
}

TEST(PoolReplay, DriverOnlyCallsTheDriverForEveryAllocation) {
  const MemoryFigures figures =
      replay_through_pool(small_tensors(), parse_replay_policy("driver-only").options, 1);
  EXPECT_EQ(figures.peak_reserved_bytes, figures.peak_in_use_bytes);
  EXPECT_EQ(figures.driver_alloc_calls, 20u);
  EXPECT_EQ(figures.driver_free_calls, 20u);
  ASSERT_TRUE(figures.at_peak);
  EXPECT_FALSE(figures.at_peak->fragmentation());
}

TEST(PoolReplay, NoSplitGivesEachRequestItsOwnSegment) {
  const MemoryFigures figures =
      replay_through_pool(small_tensors(), parse_replay_policy("no-split").options, 1);
  EXPECT_EQ(figures.peak_reserved_bytes, 10u * (100 << 10));
  EXPECT_EQ(figures.driver_alloc_calls, 10u);
}

// 3 x 2^48 bytes live, a free block just too small for the next 2^48: the pool grew past 2^50
// bytes reserved (and past 2^64 with more such steps) while the live bytes stayed within 2^50.
TEST(PoolReplay, ReservedBytesStayWithinTheDevice) {
  constexpr uint64_t kLargest = uint64_t{1} << 48;  // SizePolicy::kMaxRequest
  const DeviceTrace trace = trace_of({{Action::kAllocate, kBase, kLargest},
                                      {Action::kAllocate, kBase + 1, kLargest},
                                      {Action::kAllocate, kBase + 2, kLargest},
                                      {Action::kAllocate, kBase + 3, kLargest - 64 * kMiB},
                                      {Action::kFree, kBase + 3, kLargest - 64 * kMiB},
                                      {Action::kAllocate, kBase + 4, kLargest}});
  const MemoryFigures figures =
      replay_through_pool(trace, parse_replay_policy("default").options, 0);
  EXPECT_EQ(figures.peak_in_use_bytes, ReplayDevice::kCapacityBytes);
  EXPECT_EQ(figures.peak_reserved_bytes, ReplayDevice::kCapacityBytes);
}

// Past the device even with the pool emptied: a clear error naming the call.
TEST(PoolReplay, ARequestPastTheDeviceIsRefusedNamingTheCall) {
  const DeviceTrace trace = trace_of({{Action::kAllocate, kBase, uint64_t{1} << 49},
                                      {Action::kAllocate, kBase + 1, uint64_t{1} << 49},
                                      {Action::kAllocate, kBase + 2, 512}});
  try {
    replay_through_pool(trace, parse_replay_policy("driver-only").options, 0);
    FAIL() << "replayed past the device";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "call 3 of the replay: no room for 512 bytes on the replay's device of 2^50 "
                 "bytes, even with the pool emptied");
  }
}

// 2^15 segments of 2^49 bytes in turn, one small segment live throughout: the addresses passed
// 2^64 and wrapped.
TEST(ReplayDevice, AddressesAreReusedNeverWrapped) {
  ReplayDevice device;
  CUdeviceptr kept = 0;
  ASSERT_EQ(device.allocate(512, &kept), CUDA_SUCCESS);
  for (int i = 0; i < (1 << 15); ++i) {
    CUdeviceptr ptr = 0;
    ASSERT_EQ(device.allocate(uint64_t{1} << 49, &ptr), CUDA_SUCCESS);
    ASSERT_GT(ptr, kept) << i;
    ASSERT_LE(ptr, UINT64_MAX - (uint64_t{1} << 49)) << i;
    ASSERT_EQ(device.free(ptr), CUDA_SUCCESS);
  }
  EXPECT_EQ(device.segments().size(), 1u);
}

TEST(ReplayPolicy, NamesAreChecked) {
  EXPECT_EQ(*parse_replay_policy("max-cached=1M").options.max_cached_bytes, kMiB);
  EXPECT_FALSE(parse_replay_policy("no-split").options.split_blocks);
  EXPECT_FALSE(parse_replay_policy("driver-only").options.enabled);
  EXPECT_THROW(parse_replay_policy("max-cached=lots"), std::runtime_error);
  EXPECT_THROW(parse_replay_policy("fast"), std::runtime_error);
}

}  // namespace
}  // namespace vramshim::analyzer
