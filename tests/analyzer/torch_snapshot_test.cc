// PyTorch memory snapshots read as allocation traces: the history's events in order, checked, and
// broken snapshots refused with a message that names the event.
#include "analyzer/model/torch_snapshot.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/model/trace_reader.h"

namespace vramshim::analyzer {
namespace {

using Action = AllocationEvent::Action;

constexpr uint64_t kSegment = 0x7f0000000000;

std::string fixture(const std::string& name) { return "tests/analyzer/trace_fixtures/" + name; }

std::string rejection_of(const std::string& path) {
  try {
    read_allocation_trace(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << path << " read without error";
  return "";
}

std::string written(const std::string& name, const std::string& data) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path, std::ios::binary) << data;
  return path;
}

// VALID_EVENTS of make_trace_fixtures.py, on device 1 (device 0's history is empty).
TEST(TorchSnapshot, ReadsTheHistoryOfEachDevice) {
  const AllocationTrace trace = read_allocation_trace(fixture("snapshot_valid.pickle"));
  EXPECT_EQ(trace.format, "PyTorch memory snapshot");
  EXPECT_EQ(trace.allocator, "PyTorch");
  ASSERT_EQ(trace.devices.size(), 1u);
  const DeviceTrace& device = trace.devices[0];
  EXPECT_EQ(device.device, 1);
  EXPECT_EQ(device.allocations, 3u);
  EXPECT_EQ(device.frees, 2u);
  EXPECT_EQ(device.out_of_memory_events, 1u);
  EXPECT_TRUE(device.records_reservations);
  EXPECT_TRUE(device.whole_segments);
  const AllocationEvent expected[] = {
      {Action::kReserve, kSegment, 2 << 20},      {Action::kAllocate, kSegment, 1000},
      {Action::kAllocate, kSegment + 1024, 500},  {Action::kFree, kSegment, 1000},
      {Action::kAllocate, kSegment + 1536, 2048}, {Action::kFree, kSegment + 1024, 500},
  };
  ASSERT_EQ(device.events.size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(device.events[i].action, expected[i].action) << i;
    EXPECT_EQ(device.events[i].address, expected[i].address) << i;
    EXPECT_EQ(device.events[i].bytes, expected[i].bytes) << i;
  }
}

void expect_events(const DeviceTrace& device, const std::vector<AllocationEvent>& expected) {
  ASSERT_EQ(device.events.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(device.events[i].action, expected[i].action) << i;
    EXPECT_EQ(device.events[i].address, expected[i].address) << i;
    EXPECT_EQ(device.events[i].bytes, expected[i].bytes) << i;
  }
}

// window_snapshot of make_trace_fixtures.py: the history keeps the last events only. What the
// device held before them comes first, segments then allocations, in address order: the block
// allocated at the snapshot that the history did not allocate (its requested size), the
// allocations it frees without allocating them (the size of the free), the segment it frees.
TEST(TorchSnapshot, AHistoryOfTheLastEventsStartsFromWhatTheDeviceHeldBeforeThem) {
  const AllocationTrace trace = read_allocation_trace(fixture("snapshot_window.pickle"));
  ASSERT_EQ(trace.devices.size(), 1u);
  const DeviceTrace& device = trace.devices[0];
  constexpr uint64_t kOther = kSegment + (4 << 20);
  expect_events(device, {{Action::kReserve, kSegment, 2 << 20},
                         {Action::kReserve, kOther, 2 << 20},
                         {Action::kAllocate, kSegment, 1000},
                         {Action::kAllocate, kSegment + 4096, 700},
                         {Action::kAllocate, kSegment + 8192, 300},
                         {Action::kFree, kSegment + 4096, 700},
                         {Action::kAllocate, kSegment + 1024, 500},
                         {Action::kRelease, kOther, 2 << 20},
                         {Action::kFree, kSegment + 8192, 300}});
  EXPECT_EQ(device.allocations, 4u);
  EXPECT_EQ(device.allocations_before_trace, 3u);
  EXPECT_EQ(device.frees, 2u);
  EXPECT_TRUE(device.whole_segments);
}

// An expandable segment of 40 MiB at the snapshot, 20 MiB of it mapped by the history (which also
// unmaps and maps again 10 MiB): the other 20 MiB were mapped before it.
TEST(TorchSnapshot, AnExpandableSegmentKeepsWhatWasMappedBeforeTheHistory) {
  const AllocationTrace trace = read_allocation_trace(fixture("snapshot_window_expandable.pickle"));
  ASSERT_EQ(trace.devices.size(), 1u);
  const DeviceTrace& device = trace.devices[0];
  EXPECT_FALSE(device.whole_segments);
  ASSERT_FALSE(device.events.empty());
  EXPECT_EQ(device.events[0].action, Action::kReserve);
  EXPECT_EQ(device.events[0].bytes, uint64_t{20} << 20);
  EXPECT_EQ(device.allocations_before_trace, 0u);
}

TEST(TorchSnapshot, RefusesBrokenHistoriesNamingTheEvent) {
  const struct {
    const char* file;
    const char* message;
  } cases[] = {
      {"snapshot_unknown_action.pickle", "device_traces[1][5]: unknown action 'allocate'"},
      {"snapshot_unknown_free.pickle",
       "device_traces[1][5]: free_completed of 0x7f0000000000, which is not allocated then"},
      {"snapshot_double_alloc.pickle",
       "device_traces[1][5]: alloc at 0x7f0000000400, which is already allocated"},
      {"snapshot_empty_segment.pickle", "device_traces[1][0]: segment_alloc of 0 bytes"},
      {"snapshot_overlapping_segments.pickle",
       "device_traces[1][1]: segment_alloc at 0x7f0000100000 of 2097152 bytes, over a segment "
       "already allocated"},
      {"snapshot_missing_addr.pickle", "device_traces[1][1]: has no \"addr\""},
      {"snapshot_string_size.pickle", "device_traces[1][1]: \"size\" is a str, not an int"},
      {"snapshot_many_fields.pickle", "device_traces[1][1]: has 46 fields, not an event"},
      {"snapshot_live_over_a_device.pickle",
       "device_traces[1][6]: allocations live at once hold more than 2^50 bytes "
       "(1125899906842624), more than any device holds"},
      {"snapshot_reserved_over_a_device.pickle",
       "device_traces[1][6]: segments live at once hold more than 2^50 bytes "
       "(1125899906842624), more than any device holds"},
      {"snapshot_no_history.pickle", "records no allocations"},
      {"snapshot_not_a_dict.pickle", "holds a list, not a PyTorch memory snapshot"},
      {"refused_stack_global.pickle", "(STACK_GLOBAL) refused"},
  };
  for (const auto& c : cases) {
    const std::string message = rejection_of(fixture(c.file));
    EXPECT_EQ(message.rfind(fixture(c.file) + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(TraceReader, NamesWhatTheFileIsInstead) {
  EXPECT_NE(rejection_of(written("report.json", "{\"format\": \"vramshim-report\"}"))
                .find("vramshim report, which records no event trace yet"),
            std::string::npos);
  EXPECT_NE(rejection_of(written("text.txt", "hello")).find("not a PyTorch memory snapshot"),
            std::string::npos);
  EXPECT_NE(rejection_of(written("empty.pickle", "")).find(": empty"), std::string::npos);
  EXPECT_NE(rejection_of(fixture("no_such_file.pickle")).find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace vramshim::analyzer
