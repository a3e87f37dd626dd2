// A PyTorch memory snapshot read into a report (vramshim import torch-snapshot), on a snapshot
// small enough to work out by hand: the blocks and their states, a gap between blocks, frees
// requested and completed, an allocation older than the trace, and the figures the trace implies.
#include "analyzer/model/torch_snapshot_report.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/export/pickle_writer.h"
#include "analyzer/export/torch_snapshot_export.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/pickle_reader.h"
#include "analyzer/model/shown_name.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

constexpr int64_t kBase = 0x7f0000000000;
constexpr int64_t kKiB = 1024;

void key(PickleWriter& w, const char* name, int64_t value) {
  w.string(name);
  w.integer(value);
}

void frame(PickleWriter& w, const char* file, int64_t line, const char* name) {
  w.begin_dict();
  w.string("filename");
  w.string(file);
  key(w, "line", line);
  w.string("name");
  w.string(name);
  w.end_dict();
}

// Innermost first, as PyTorch lists them: a C++ frame under a Python one.
void frames(PickleWriter& w, int which) {
  w.string("frames");
  w.begin_list();
  if (which == 1) {
    frame(w, "/pytorch/aten/src/ATen/Empty.cpp", 42, "at::empty");
    frame(w, "train.py", 10, "forward");
  } else if (which == 2) {
    frame(w, "train.py", 20, "backward");
  } else if (which == 3) {
    frame(w, "train.py", 30, "release");
  }
  w.end_list();
}

void block(PickleWriter& w, int64_t offset, int64_t size, int64_t requested, const char* state,
           int which) {
  w.begin_dict();
  key(w, "address", kBase + offset);
  key(w, "size", size);
  key(w, "requested_size", requested);
  w.string("state");
  w.string(state);
  frames(w, which);
  w.end_dict();
}

// Opens a segment dict: its device, address and size, then the "blocks" key, whose list follows.
void begin_segment(PickleWriter& w, int64_t device, int64_t address, int64_t total_size) {
  w.begin_dict();
  key(w, "device", device);
  key(w, "address", address);
  key(w, "total_size", total_size);
  w.string("blocks");
}

void entry(PickleWriter& w, const char* action, int64_t address, int64_t size, double seconds,
           int which) {
  w.begin_dict();
  w.string("action");
  w.string(action);
  key(w, "addr", address);
  key(w, "size", size);
  key(w, "stream", 0);
  key(w, "time_us", static_cast<int64_t>(seconds * 1e6));
  frames(w, which);
  w.end_dict();
}

std::string snapshot() {
  const int64_t a = kBase, b = kBase + 512 * kKiB, d = kBase + 640 * kKiB;
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, 0, kBase, 1024 * kKiB);
  w.begin_list();
  block(w, 0, 512 * kKiB, 500000, "active_allocated", 1);
  block(w, 512 * kKiB, 256 * kKiB, 100000, "active_pending_free", 2);
  // 768 KiB to 896 KiB: no block listed (a gap)
  block(w, 896 * kKiB, 128 * kKiB, 0, "inactive", 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();
  entry(w, "segment_alloc", a, 1024 * kKiB, 1.0, 0);
  entry(w, "free_completed", d, 300000, 1.05, 2);  // allocated before the trace began
  entry(w, "alloc", a, 500000, 1.1, 1);
  entry(w, "alloc", b, 200000, 1.2, 2);
  entry(w, "free_requested", b, 200000, 1.3, 3);
  entry(w, "free_completed", b, 200000, 1.4, 3);
  entry(w, "snapshot", 0, 0, 1.45, 0);
  entry(w, "alloc", b, 100000, 1.5, 2);
  entry(w, "free_requested", b, 100000, 1.6, 3);  // still pending at the snapshot
  w.end_list();
  w.end_list();
  w.end_dict();
  return w.finish();
}

const Site* site_named(const Report& report, const std::string& function) {
  for (const Site& site : report.sites) {
    if (site.stack < 0) continue;
    const Stack& stack = report.stacks[static_cast<size_t>(site.stack)];
    if (report.frames[stack.frames.back()].function == function) return &site;
  }
  return nullptr;
}

TEST(TorchSnapshotReportTest, SegmentsBlocksAndFramesAreTheSnapshots) {
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  EXPECT_EQ(report.version, 3);
  EXPECT_EQ(report.reason, "import");
  ASSERT_EQ(report.segments.size(), 1u);
  const PoolSegment& s = report.segments[0];
  EXPECT_EQ(s.base, static_cast<uint64_t>(kBase));
  ASSERT_EQ(s.blocks.size(), 4u);  // the gap became a free block
  EXPECT_TRUE(s.blocks[0].allocated);
  EXPECT_EQ(s.blocks[0].requested, 500000);
  EXPECT_TRUE(s.blocks[1].pending);
  EXPECT_EQ(s.blocks[1].requested, 0);
  EXPECT_EQ(s.blocks[1].stack, -1);
  EXPECT_EQ(s.blocks[2].offset, 768 * kKiB);
  EXPECT_EQ(s.blocks[2].size, 128 * kKiB);
  EXPECT_FALSE(s.blocks[2].allocated || s.blocks[2].pending);
  // at::empty is a symbolized native frame, train.py's lines Python frames.
  const Stack& stack = report.stacks[static_cast<size_t>(s.blocks[0].stack)];
  ASSERT_EQ(stack.frames.size(), 2u);
  const Frame& native = report.frames[stack.frames[0]];
  const Frame& python = report.frames[stack.frames[1]];
  EXPECT_TRUE(native.symbolized);
  EXPECT_FALSE(native.python);
  EXPECT_EQ(native.function, "at::empty");
  EXPECT_EQ(native.file, "/pytorch/aten/src/ATen/Empty.cpp");
  EXPECT_EQ(native.line, 42);
  EXPECT_TRUE(python.python);
  EXPECT_EQ(python.file, "train.py");
}

// A report's Python frame without a line (-1, as the shim writes one) is exported as line 0: the
// snapshot an export writes is one the import takes.
TEST(TorchSnapshotReportTest, AFrameWithoutALineIsExportedAsOneTheImportTakes) {
  Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  for (Frame& frame : report.frames) {
    if (frame.python) frame.line = -1;
  }
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const Report again =
      report_from_torch_snapshot(*read_pickle(torch_snapshot(report, table)), "e.pickle");
  ASSERT_NE(site_named(again, "forward"), nullptr);
  const Stack& stack = again.stacks[static_cast<size_t>(site_named(again, "forward")->stack)];
  EXPECT_EQ(again.frames[stack.frames.back()].line, 0);
}

// Another thread's event may come after the report's time was taken (before the trace was read):
// the export's closing "snapshot" entry stays in time order, as the viewer reads each trace.
TEST(TorchSnapshotReportTest, TheExportsTraceEndsInTimeOrder) {
  Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  report.process.report_time = 1.2;  // before the trace's last events (1.5, 1.6)
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  const PickleValue::Ref exported = read_pickle(torch_snapshot(report, table));
  const PickleValue* traces = exported->find("device_traces");
  ASSERT_NE(traces, nullptr);
  ASSERT_EQ(traces->items().size(), 1u);
  const std::vector<PickleValue::Ref>& trace = traces->items()[0]->items();
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(trace.back()->find("action")->text(), "snapshot");
  int64_t last = 0;
  for (const PickleValue::Ref& entry : trace) {
    const int64_t time_us = entry->find("time_us")->integer();
    EXPECT_GE(time_us, last) << entry->find("action")->text();
    last = time_us;
  }
}

// An out-of-memory entry, as PyTorch records it: the request's size and the device's free memory.
void out_of_memory_entry(PickleWriter& w, int64_t size, int64_t device_free, double seconds) {
  w.begin_dict();
  w.string("action");
  w.string("oom");
  key(w, "device_free", device_free);
  key(w, "size", size);
  key(w, "stream", 0);
  key(w, "time_us", static_cast<int64_t>(seconds * 1e6));
  frames(w, 3);
  w.end_dict();
}

// A snapshot dumped after an out-of-memory error, as PyTorch users dump one (in the except block):
// one 20 MiB segment; A (8 MiB), B (2 MiB) and C (4 MiB) allocated, B freed, then a request of
// `request` failed, then C was freed by the exception's unwinding before the dump.
std::string snapshot_after_out_of_memory(int64_t request, int out_of_memory_entries) {
  constexpr int64_t kMiB = 1024 * kKiB;
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, 0, kBase, 20 * kMiB);
  w.begin_list();
  block(w, 0, 8 * kMiB, 8 * kMiB, "active_allocated", 1);
  block(w, 8 * kMiB, 12 * kMiB, 0, "inactive", 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();
  entry(w, "segment_alloc", kBase, 20 * kMiB, 1.0, 0);
  entry(w, "alloc", kBase, 8 * kMiB, 1.1, 1);
  entry(w, "alloc", kBase + 8 * kMiB, 2 * kMiB, 1.2, 2);
  entry(w, "alloc", kBase + 10 * kMiB, 4 * kMiB, 1.3, 2);
  entry(w, "free_requested", kBase + 8 * kMiB, 2 * kMiB, 1.4, 3);
  entry(w, "free_completed", kBase + 8 * kMiB, 2 * kMiB, 1.41, 3);
  for (int i = 0; i < out_of_memory_entries; ++i) {
    out_of_memory_entry(w, request, 1 * kMiB, 1.5 + 0.01 * i);
  }
  entry(w, "free_requested", kBase + 10 * kMiB, 4 * kMiB, 1.6, 3);
  entry(w, "free_completed", kBase + 10 * kMiB, 4 * kMiB, 1.61, 3);
  w.end_list();
  w.end_list();
  w.end_dict();
  return w.finish();
}

// The out-of-memory moment of a snapshot is the report's "oom": the segments then (C, freed since,
// back in its place), the free space the request did not fit in, and the sites holding the most.
TEST(TorchSnapshotReportTest, ASnapshotsOutOfMemoryEntryIsExplainedWithTheSegmentsThen) {
  constexpr int64_t kMiB = 1024 * kKiB;
  const Report report = report_from_torch_snapshot(
      *read_pickle(snapshot_after_out_of_memory(7 * kMiB, 2)), "s.pickle");
  ASSERT_TRUE(report.oom);
  const OutOfMemory& oom = *report.oom;
  EXPECT_EQ(oom.request.bytes, 7 * kMiB);
  EXPECT_EQ(oom.request.device, 0);
  EXPECT_EQ(oom.request.call, "PyTorch's allocation");
  ASSERT_GE(oom.request.stack, 0);
  EXPECT_EQ(report.frames[report.stacks[static_cast<size_t>(oom.request.stack)].frames[0]].function,
            "release");
  EXPECT_DOUBLE_EQ(oom.time, 1.51);  // the last of the two
  EXPECT_EQ(oom.failures, 2);
  EXPECT_EQ(oom.device_free_bytes, 1 * kMiB);
  EXPECT_FALSE(oom.device_total_bytes);
  EXPECT_EQ(oom.in_use_bytes, 12 * kMiB);
  EXPECT_EQ(oom.reserved_bytes, 20 * kMiB);
  EXPECT_EQ(oom.cached_bytes, 8 * kMiB);
  EXPECT_EQ(oom.pool_free_bytes, 8 * kMiB);
  EXPECT_EQ(oom.pool_largest_free_block, 6 * kMiB);
  EXPECT_EQ(oom.verdict, "fragmentation");
  EXPECT_EQ(
      oom.explanation,
      "fragmentation: PyTorch's segments held 8.0 MiB free, but no free block of 7.0 MiB (the "
      "largest is 6.0 MiB) (1 allocation freed after the failure put back with the sizes "
      "PyTorch rounds requests to: the free space around them is an estimate)");
  ASSERT_EQ(oom.segments.size(), 1u);
  std::string blocks;
  for (const SegmentBlock& b : oom.segments[0].blocks) {
    blocks += std::to_string(b.offset / kMiB) + "+" + std::to_string(b.size / kMiB) +
              (b.allocated ? "a " : "f ");
  }
  EXPECT_EQ(blocks, "0+8a 8+2f 10+4a 14+6f ");
  ASSERT_EQ(oom.leading_sites.size(), 2u);
  EXPECT_EQ(oom.leading_sites[0].live_bytes, 8 * kMiB);
  EXPECT_EQ(oom.leading_sites[1].live_bytes, 4 * kMiB);
  EXPECT_EQ(oom.leading_sites[1].live_count, 1);
  // What the snapshot cannot say is said: the device's total and other processes.
  ASSERT_EQ(oom.unasked.size(), 1u);
}

// A tensor of 11.25 MiB takes a whole 12 MiB segment (PyTorch splits a large block only when more
// than 1 MiB would be left); freed after the failure, it came back as 11.25 MiB and left a free
// block of 768 KiB no large segment of PyTorch's has: "fragmentation" where the device was full.
TEST(TorchSnapshotReportTest, ATensorPutBackInALargeSegmentTakesTheRestPyTorchDidNotSplit) {
  constexpr int64_t kMiB = 1024 * kKiB;
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, 0, kBase, 12 * kMiB);
  w.begin_list();
  block(w, 0, 12 * kMiB, 0, "inactive", 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();
  entry(w, "segment_alloc", kBase, 12 * kMiB, 1.0, 0);
  entry(w, "alloc", kBase, 45 * kMiB / 4, 1.1, 1);
  out_of_memory_entry(w, 512 * kKiB, 0, 1.2);
  entry(w, "free_requested", kBase, 45 * kMiB / 4, 1.3, 1);
  entry(w, "free_completed", kBase, 45 * kMiB / 4, 1.31, 1);
  w.end_list();
  w.end_list();
  w.end_dict();
  const Report report = report_from_torch_snapshot(*read_pickle(w.finish()), "s.pickle");
  ASSERT_TRUE(report.oom);
  ASSERT_EQ(report.oom->segments.size(), 1u);
  ASSERT_EQ(report.oom->segments[0].blocks.size(), 1u);
  EXPECT_EQ(report.oom->segments[0].blocks[0].size, 12 * kMiB);
  EXPECT_EQ(report.oom->segments[0].blocks[0].requested, 45 * kMiB / 4);
  EXPECT_EQ(report.oom->pool_free_bytes, 0);
  EXPECT_EQ(report.oom->verdict, "exhaustion");
}

// An expandable segment is one segment for each range mapped in one piece: B freed after the
// failure and its pages unmapped (empty_cache) made two segments at the snapshot; at the failure
// they were one, A, B and C in it. Taken as three pieces, B's came out 10 MiB holding 30 MiB
// requested, a report every command refused.
TEST(TorchSnapshotReportTest, AnExpandableSegmentsPagesUnmappedAfterTheFailureAreOneSegmentAgain) {
  constexpr int64_t kMiB = 1024 * kKiB;
  const auto expandable_segment = [](PickleWriter& w, int64_t address, int64_t size) {
    w.begin_dict();
    key(w, "device", 0);
    key(w, "address", address);
    key(w, "total_size", size);
    w.string("is_expandable");
    w.boolean(true);
    w.string("blocks");
  };
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  expandable_segment(w, kBase, 30 * kMiB);
  w.begin_list();
  block(w, 0, 30 * kMiB, 30 * kMiB, "active_allocated", 1);
  w.end_list();
  w.end_dict();
  expandable_segment(w, kBase + 60 * kMiB, 40 * kMiB);
  w.begin_list();
  block(w, 60 * kMiB, 30 * kMiB, 30 * kMiB, "active_allocated", 2);
  block(w, 90 * kMiB, 10 * kMiB, 0, "inactive", 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();
  entry(w, "segment_map", kBase, 100 * kMiB, 1.0, 0);
  entry(w, "alloc", kBase, 30 * kMiB, 1.1, 1);
  entry(w, "alloc", kBase + 30 * kMiB, 30 * kMiB, 1.2, 3);
  entry(w, "alloc", kBase + 60 * kMiB, 30 * kMiB, 1.3, 2);
  out_of_memory_entry(w, 60 * kMiB, 0, 1.4);
  entry(w, "free_requested", kBase + 30 * kMiB, 30 * kMiB, 1.5, 3);
  entry(w, "free_completed", kBase + 30 * kMiB, 30 * kMiB, 1.51, 3);
  entry(w, "segment_unmap", kBase + 30 * kMiB, 30 * kMiB, 1.6, 0);
  w.end_list();
  w.end_list();
  w.end_dict();
  const Report report = report_from_torch_snapshot(*read_pickle(w.finish()), "s.pickle");
  ASSERT_TRUE(report.oom);
  ASSERT_EQ(report.oom->segments.size(), 1u);
  const PoolSegment& segment = report.oom->segments[0];
  EXPECT_TRUE(segment.expandable);
  EXPECT_EQ(segment.size, 100 * kMiB);
  std::string blocks;
  for (const SegmentBlock& b : segment.blocks) {
    EXPECT_LE(b.requested, b.size);
    blocks += std::to_string(b.offset / kMiB) + "+" + std::to_string(b.size / kMiB) +
              (b.allocated ? "a " : "f ");
  }
  EXPECT_EQ(blocks, "0+30a 30+30a 60+30a 90+10f ");
  EXPECT_EQ(report.oom->pool_free_bytes, 10 * kMiB);
  EXPECT_EQ(report.oom->verdict, "exhaustion");
}

TEST(TorchSnapshotReportTest, ARequestNoFreeSpaceCouldHoldIsTheDevicesExhaustion) {
  constexpr int64_t kMiB = 1024 * kKiB;
  const Report report = report_from_torch_snapshot(
      *read_pickle(snapshot_after_out_of_memory(9 * kMiB, 1)), "s.pickle");
  ASSERT_TRUE(report.oom);
  EXPECT_EQ(report.oom->failures, 1);
  EXPECT_EQ(report.oom->verdict, "exhaustion");
  EXPECT_EQ(report.oom->explanation,
            "exhaustion: PyTorch held 20.0 MiB reserved, 12.0 MiB of it allocated, and the device "
            "had 1.0 MiB free; a snapshot does not say what else held the device (1 allocation "
            "freed after the failure put back with the sizes PyTorch rounds requests to: the free "
            "space around them is an estimate)");
  // A snapshot without an out-of-memory entry has none.
  EXPECT_FALSE(report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle").oom);
}

TEST(TorchSnapshotReportTest, TheTraceKeepsOneFreePerAllocationWithItsAllocationsStack) {
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  ASSERT_TRUE(report.trace);
  std::string types;
  for (const TraceEvent& e : report.trace->events) types += e.type + " ";
  EXPECT_EQ(types, "segment_alloc free alloc alloc free alloc free ");
  const std::vector<TraceEvent>& e = report.trace->events;
  // The free of B is at its free_requested, its size and stack the allocation's.
  EXPECT_DOUBLE_EQ(e[4].time, 1.3);
  EXPECT_EQ(e[4].size, 200000);
  EXPECT_EQ(e[4].stack, e[3].stack);
  // The allocation older than the trace is known by its free's frames.
  EXPECT_EQ(e[1].stack, e[3].stack);
  EXPECT_EQ(report.process.start_time, 1.0);
  EXPECT_EQ(report.process.report_time, 1.6);
}

TEST(TorchSnapshotReportTest, FiguresAreTheBlocksAtTheEndAndTheTraceWalkedBackFromThem) {
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  ASSERT_EQ(report.devices.size(), 1u);
  const DeviceFigures& d = report.devices[0];
  EXPECT_EQ(d.in_use_bytes, 500000);
  EXPECT_EQ(d.reserved_bytes, 1024 * kKiB);
  EXPECT_EQ(d.cached_bytes, 1024 * kKiB - 500000);
  // 300000 before the trace; freed; 500000 + 200000 the most.
  EXPECT_EQ(d.peak_in_use_bytes, 700000);
  EXPECT_EQ(report.peak_in_use_bytes, 700000);
  EXPECT_DOUBLE_EQ(report.peak_time, 1.2);
  EXPECT_EQ(d.peak_reserved_bytes, 1024 * kKiB);
  EXPECT_EQ(d.driver_alloc_calls, 1);
  EXPECT_EQ(d.pool_hits, 2);

  const Site* forward = site_named(report, "forward");
  const Site* backward = site_named(report, "backward");
  ASSERT_TRUE(forward && backward);
  EXPECT_EQ(forward->live_bytes, 500000);
  EXPECT_EQ(forward->live_count, 1);
  EXPECT_EQ(forward->total_bytes, 500000);
  EXPECT_EQ(forward->bytes_at_peak, 500000);
  EXPECT_EQ(backward->live_bytes, 0);
  EXPECT_EQ(backward->total_bytes, 300000 + 200000 + 100000);
  EXPECT_EQ(backward->total_count, 3);
  EXPECT_EQ(backward->peak_bytes, 300000);
  EXPECT_EQ(backward->bytes_at_peak, 200000);

  // The history ends at each site's live bytes; its peak is the process's.
  ASSERT_TRUE(report.history);
  EXPECT_EQ(report.history->peak_bytes, 700000);
  for (const SiteHistory& h : report.history->sites) {
    EXPECT_EQ(h.points.back().last, report.sites[static_cast<size_t>(h.site)].live_bytes);
  }
}

// A snapshot of one 512-byte segment on `device` whose one block is in `state`.
std::string one_segment_snapshot(int64_t device, const char* state) {
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, device, kBase, 512);
  w.begin_list();
  block(w, 0, 512, 512, state, 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.end_dict();
  return w.finish();
}

// torch.cuda.memory_snapshot() gives the segments alone, which PyTorch's viewer also takes: it was
// refused ("the pickle holds a list").
TEST(TorchSnapshotReportTest, TheSegmentsAloneAreASnapshotWithoutATrace) {
  PickleWriter w;
  w.begin_list();
  begin_segment(w, 0, kBase, 512);
  w.begin_list();
  block(w, 0, 512, 512, "active_allocated", 0);
  w.end_list();
  w.end_dict();
  w.end_list();
  const Report report = report_from_torch_snapshot(*read_pickle(w.finish()), "s.pickle");
  ASSERT_EQ(report.segments.size(), 1u);
  EXPECT_EQ(report.devices.at(0).in_use_bytes, 512);
  EXPECT_FALSE(report.trace.has_value());
}

// PyTorch before 2.1 gave an allocated block no "frames" nor "requested_size": both are in the
// first entry of its "history" (its "real_size"), where PyTorch's viewer still reads them. The
// import showed such blocks as allocated whole, by no code.
TEST(TorchSnapshotReportTest, ABlockOfPyTorchBefore21TakesItsHistorysFramesAndSize) {
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, 0, kBase, 2048);
  w.begin_list();
  w.begin_dict();
  key(w, "size", 1536);
  w.string("state");
  w.string("active_allocated");
  w.string("history");
  w.begin_list();
  w.begin_dict();
  key(w, "addr", kBase);
  key(w, "real_size", 1500);
  frames(w, 1);
  w.end_dict();
  w.end_list();
  w.end_dict();
  w.end_list();
  w.end_dict();
  w.end_list();
  w.end_dict();
  const Report report = report_from_torch_snapshot(*read_pickle(w.finish()), "s.pickle");
  EXPECT_EQ(report.devices.at(0).in_use_bytes, 1500);
  const Site* site = site_named(report, "forward");
  ASSERT_NE(site, nullptr) << "the block's site has no frames";
  EXPECT_EQ(site->live_bytes, 1500);
  EXPECT_EQ(site->live_count, 1);
}

// Why the snapshot is refused ("" when it is read).
std::string refusal(const std::string& snapshot) {
  try {
    report_from_torch_snapshot(*read_pickle(snapshot), "s.pickle");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(TorchSnapshotReportTest, WhatIsNotASnapshotIsRefusedNamingTheField) {
  EXPECT_EQ(refusal(one_segment_snapshot(0, "busy")),
            "segments[0].blocks[0]: unknown state 'busy'");
}

// The report an import writes must be one the reader takes: a device no machine has is refused
// here.
TEST(TorchSnapshotReportTest, ADeviceNumberNoMachineHasIsRefused) {
  EXPECT_EQ(refusal(one_segment_snapshot(int64_t{1} << 40, "active_allocated")),
            "segments[0]: \"device\" is not a device number");
}

// A snapshot of one segment per entry of `sizes`, each of that many bytes, one after another from
// address 0, and allocated whole by one block of `frames` frames (one frame dict, shared).
std::string allocated_segments_snapshot(const std::vector<int64_t>& sizes, size_t frames) {
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  uint32_t frame_memo = 0;
  uint64_t address = 0;  // unsigned: past the last of two 2^62-byte segments lies 2^63
  for (size_t i = 0; i < sizes.size(); ++i) {
    begin_segment(w, 0, static_cast<int64_t>(address), sizes[i]);
    address += static_cast<uint64_t>(sizes[i]);
    w.begin_list();
    w.begin_dict();
    key(w, "size", sizes[i]);
    key(w, "requested_size", sizes[i]);
    w.string("state");
    w.string("active_allocated");
    w.string("frames");
    w.begin_list();
    for (size_t f = 0; f < frames; ++f) {
      if (i == 0 && f == 0) {
        frame(w, "train.py", 10, "forward");
        frame_memo = w.remember();
      } else {
        w.recall(frame_memo);
      }
    }
    w.end_list();
    w.end_dict();
    w.end_list();
    w.end_dict();
  }
  w.end_list();
  w.end_dict();
  return w.finish();
}

// A pickle may list one segment dict any number of times (its memo): a segment over one before it
// on its device is refused, so that none is counted twice. Another device's may lie at the same
// address.
TEST(TorchSnapshotReportTest, ASegmentOverAnotherOnItsDeviceIsRefused) {
  const auto snapshot_of = [](int64_t second_device) {
    PickleWriter w;
    w.begin_dict();
    w.string("segments");
    w.begin_list();
    begin_segment(w, 0, kBase, 1024);
    w.begin_list();
    block(w, 0, 1024, 1024, "active_allocated", 2);
    w.end_list();
    w.end_dict();
    const uint32_t segment = w.remember();
    if (second_device == 0) {
      w.recall(segment);
    } else {
      begin_segment(w, second_device, kBase + 512, 512);
      w.begin_list();
      w.end_list();
      w.end_dict();
    }
    w.end_list();
    w.end_dict();
    return w.finish();
  };
  EXPECT_EQ(refusal(snapshot_of(0)),
            "segments[1]: a segment at 0x7f0000000000 of 1024 bytes, over a segment before it on "
            "device 0");
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot_of(1)), "s.pickle");
  EXPECT_EQ(report.segments.size(), 2u);
  ASSERT_EQ(report.sites.size(), 1u);
  EXPECT_EQ(report.sites[0].live_bytes, 1024);
}

// Segments apart from each other may still share one list of blocks: the blocks of all segments,
// each listing counted, have a bound far under the one on entries.
TEST(TorchSnapshotReportTest, TheBlocksOfAllSegmentsHaveABound) {
  constexpr int64_t kBlocks = 100000;
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  uint32_t blocks = 0;
  for (int64_t i = 0; i < 11; ++i) {
    begin_segment(w, 0, kBase + i * 512 * kBlocks, 512 * kBlocks);
    if (i > 0) {
      w.recall(blocks);
    } else {
      w.begin_list();
      w.begin_dict();  // no address: each block follows the one before
      key(w, "size", 512);
      w.string("state");
      w.string("inactive");
      w.end_dict();
      const uint32_t block_memo = w.remember();
      for (int64_t b = 1; b < kBlocks; ++b) w.recall(block_memo);
      w.end_list();
      blocks = w.remember();
    }
    w.end_dict();
  }
  w.end_list();
  w.end_dict();
  EXPECT_EQ(refusal(w.finish()),
            "the segments list more than 1000000 blocks (a shared one counted each time it is "
            "listed)");
}

// Sites are where memory was allocated: a segment's events (and oom's) make none.
TEST(TorchSnapshotReportTest, OnlyAllocationsMakeSites) {
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot()), "s.pickle");
  for (const Site& site : report.sites) EXPECT_GE(site.stack, 0);
}

// Peaks are per device (FORMAT.md): the report's is the sum of each device's, and a site's bytes
// at the peak what it held at its own device's.
TEST(TorchSnapshotReportTest, EachDeviceCountsAtItsOwnPeak) {
  constexpr int64_t kMiB = 1024 * kKiB;
  const int64_t other = kBase + 64 * kMiB;
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  for (const int device : {0, 1}) {
    begin_segment(w, device, device == 0 ? kBase : other, 20 * kMiB);
    w.begin_list();
    if (device == 1) {  // block() takes offsets from kBase
      block(w, other - kBase, 8 * kMiB, 8 * kMiB, "active_allocated", 2);
      block(w, other - kBase + 8 * kMiB, kMiB, kMiB, "active_allocated", 2);
      block(w, other - kBase + 9 * kMiB, 11 * kMiB, 0, "inactive", 0);
    } else {
      block(w, 0, 20 * kMiB, 0, "inactive", 0);
    }
    w.end_list();
    w.end_dict();
  }
  w.end_list();
  w.string("device_traces");
  w.begin_list();
  w.begin_list();  // device 0: 10 MiB, then freed
  entry(w, "alloc", kBase, 10 * kMiB, 1.0, 1);
  entry(w, "free_requested", kBase, 10 * kMiB, 2.0, 1);
  entry(w, "free_completed", kBase, 10 * kMiB, 2.0, 1);
  w.end_list();
  w.begin_list();  // device 1: 8 MiB and 1 MiB, held at the end
  entry(w, "alloc", other, 8 * kMiB, 3.0, 2);
  entry(w, "alloc", other + 8 * kMiB, kMiB, 4.0, 2);
  w.end_list();
  w.end_list();
  w.end_dict();
  const Report report = report_from_torch_snapshot(*read_pickle(w.finish()), "s.pickle");
  EXPECT_EQ(report.peak_in_use_bytes, 19 * kMiB);
  EXPECT_DOUBLE_EQ(report.peak_time, 4.0);
  ASSERT_NE(site_named(report, "forward"), nullptr);
  ASSERT_NE(site_named(report, "backward"), nullptr);
  EXPECT_EQ(site_named(report, "forward")->bytes_at_peak, 10 * kMiB);
  EXPECT_EQ(site_named(report, "backward")->bytes_at_peak, 9 * kMiB);
}

// The report an import writes must be one the reader takes: a stack longer than the reader's
// bound is refused here, naming where it is.
TEST(TorchSnapshotReportTest, AStackLongerThanTheBoundIsRefused) {
  const Report report = report_from_torch_snapshot(
      *read_pickle(allocated_segments_snapshot({512}, kMaxStackFrames)), "s.pickle");
  ASSERT_EQ(report.stacks.size(), 1u);
  EXPECT_EQ(report.stacks[0].frames.size(), kMaxStackFrames);
  EXPECT_EQ(refusal(allocated_segments_snapshot({512}, kMaxStackFrames + 1)),
            "segments[0].blocks[0]: 4097 frames, more than the 4096 a stack may have");
}

// A snapshot of one 512-byte segment allocated whole by one block, whose frames `write_frames`
// writes (the items of its "frames" list).
std::string one_block_snapshot(const std::function<void(PickleWriter&)>& write_frames) {
  PickleWriter w;
  w.begin_dict();
  w.string("segments");
  w.begin_list();
  begin_segment(w, 0, kBase, 512);
  w.begin_list();
  w.begin_dict();
  key(w, "size", 512);
  key(w, "requested_size", 512);
  w.string("state");
  w.string("active_allocated");
  w.string("frames");
  w.begin_list();
  write_frames(w);
  w.end_list();
  w.end_dict();
  w.end_list();
  w.end_dict();
  w.end_list();
  w.end_dict();
  return w.finish();
}

// CPython gives -1 for code without a line (the cleanup after `except ... as e`, which may free a
// tensor): PyTorch's C++ API writes it as -1, its Python one unsigned (2^64 - 1, which the pickle
// reader saturates). The frame's line is unknown (0); the snapshot is read.
TEST(TorchSnapshotReportTest, AFrameLineThatIsNoLineNumberIsUnknown) {
  for (const int64_t line : {int64_t{-1}, std::numeric_limits<int64_t>::max(), int64_t{1} << 31}) {
    const std::string snapshot =
        one_block_snapshot([&](PickleWriter& w) { frame(w, "train.py", line, "step"); });
    const Report report = report_from_torch_snapshot(*read_pickle(snapshot), "s.pickle");
    ASSERT_EQ(report.frames.size(), 1u) << line;
    EXPECT_EQ(report.frames[0].line, 0) << line;
    EXPECT_EQ(report.frames[0].function, "step");
  }
}

// Code with a made-up name is Python's too: a notebook cell, exec's string, torch.fx's graph code.
TEST(TorchSnapshotReportTest, AFileInAngleBracketsIsPythonCode) {
  const std::string snapshot = one_block_snapshot([](PickleWriter& w) {
    frame(w, "<eval_with_key>.3", 12, "forward");
    frame(w, "<ipython-input-3-5f2a>", 4, "<module>");
    frame(w, "memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()");
  });
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot), "s.pickle");
  ASSERT_EQ(report.frames.size(), 3u);
  EXPECT_TRUE(report.frames[0].python);
  EXPECT_TRUE(report.frames[1].python);
  EXPECT_FALSE(report.frames[2].python);
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  std::vector<uint32_t> visible;
  table.visible_stack(0, visible);
  ASSERT_EQ(visible.size(), 2u);  // the recorder's frame hidden
  // The fx graph's line (an operation of the model) names the site, as the user's code.
  EXPECT_EQ(table.frame(table.label(visible)).function, "forward");
}

// PyTorch's symbolizer says "??" of a file it does not know: the report knows none, and the export
// says "??" again.
TEST(TorchSnapshotReportTest, AnUnknownFileIsNoFileAndExportedAsPyTorchSaysIt) {
  const std::string snapshot = one_block_snapshot([](PickleWriter& w) {
    frame(w, "??", 0, "torch::autograd::generated::MulBackward0::apply()");
  });
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot), "s.pickle");
  ASSERT_EQ(report.frames.size(), 1u);
  EXPECT_EQ(report.frames[0].file, "");
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  EXPECT_EQ(table.frame(0).location(), "");
  const PickleValue::Ref exported = read_pickle(torch_snapshot(report, table));
  const PickleValue& block = *exported->find("segments")->items()[0]->find("blocks")->items()[0];
  const PickleValue& frame = *block.find("frames")->items()[0];
  EXPECT_EQ(frame.find("filename")->text(), "??");
  EXPECT_EQ(frame.find("name")->text(), "torch::autograd::generated::MulBackward0::apply()");
}

// A frame's names are kept cut to the bound the views show them at: each imported frame keeps a
// copy, and a snapshot sharing one long name among thousands of frames made gigabytes of them.
TEST(TorchSnapshotReportTest, LongFrameNamesAreKeptCut) {
  const std::string long_name(100000, 'n');
  const std::string snapshot = one_block_snapshot([&](PickleWriter& w) {
    frame(w, ("/src/" + long_name + ".cpp").c_str(), 7, long_name.c_str());
  });
  const Report report = report_from_torch_snapshot(*read_pickle(snapshot), "s.pickle");
  ASSERT_EQ(report.frames.size(), 1u);
  // Cut to 4,096 bytes with "…#" and a hash (12 bytes).
  EXPECT_EQ(report.frames[0].function.substr(0, 4084 + 4), std::string(4084, 'n') + "\u2026#");
  EXPECT_EQ(report.frames[0].file.substr(0, 4084 + 4),
            "/src/" + std::string(4079, 'n') + "\u2026#");
  EXPECT_EQ(report.frames[0].function.size(), 4096u);
}

// A long name the snapshot shares among many frames (one str in its memo) is cut once: the cut
// hashes the whole name, and 16,384 frames sharing two names of 1 MiB took 38 s.
TEST(TorchSnapshotReportTest, ALongNameSharedByManyFramesIsCutOnce) {
  const std::string long_file = "/src/" + std::string((1 << 20) - 9, 'f') + ".cpp";
  const std::string long_name(1 << 20, 'n');
  const auto snapshot = read_pickle(one_block_snapshot([&](PickleWriter& w) {
    uint32_t file = 0, name = 0;
    for (int64_t line = 1; line <= static_cast<int64_t>(kMaxStackFrames); ++line) {
      w.begin_dict();
      w.string("filename");
      if (line == 1) {
        w.string(long_file);
        file = w.remember();
      } else {
        w.recall(file);
      }
      key(w, "line", line);
      w.string("name");
      if (line == 1) {
        w.string(long_name);
        name = w.remember();
      } else {
        w.recall(name);
      }
      w.end_dict();
    }
  }));
  const uint64_t cuts_before = shown_name_cuts();
  const Report report = report_from_torch_snapshot(*snapshot, "s.pickle");
  EXPECT_EQ(shown_name_cuts() - cuts_before, 2u);  // 8,192 before: 15.6 s
  ASSERT_EQ(report.frames.size(), kMaxStackFrames);
  for (const Frame& frame : report.frames) {
    EXPECT_EQ(frame.function, report.frames[0].function);
    EXPECT_EQ(frame.file, report.frames[0].file);
  }
  EXPECT_EQ(report.frames[0].function, shown_name(long_name));
  EXPECT_EQ(report.frames[0].file, shown_name(long_file));
}

// ... and so is a size larger than any the reader takes.
TEST(TorchSnapshotReportTest, ASizeOverTheReadersBoundIsRefused) {
  EXPECT_EQ(refusal(allocated_segments_snapshot({kFigureLimit + 1}, 1)),
            "segments[0]: \"total_size\" is 4611686018427387905, more than a report holds "
            "(4611686018427387904)");
}

// Sums of the blocks' sizes stop at that bound, on the site and the device alike.
TEST(TorchSnapshotReportTest, SumsOfSizesStopAtTheReadersBound) {
  const Report report = report_from_torch_snapshot(
      *read_pickle(allocated_segments_snapshot({kFigureLimit, kFigureLimit}, 1)), "s.pickle");
  ASSERT_EQ(report.sites.size(), 1u);
  EXPECT_EQ(report.sites[0].live_bytes, kFigureLimit);
  EXPECT_EQ(report.sites[0].live_count, 2);
  EXPECT_EQ(report.sites[0].total_bytes, kFigureLimit);
  EXPECT_EQ(report.sites[0].peak_bytes, kFigureLimit);
  EXPECT_EQ(report.sites[0].bytes_at_peak, kFigureLimit);
  ASSERT_EQ(report.devices.size(), 1u);
  EXPECT_EQ(report.devices[0].in_use_bytes, kFigureLimit);
  EXPECT_EQ(report.devices[0].reserved_bytes, kFigureLimit);
  EXPECT_EQ(report.devices[0].peak_in_use_bytes, kFigureLimit);
  EXPECT_EQ(report.peak_in_use_bytes, kFigureLimit);
}

}  // namespace
}  // namespace vramshim::analyzer
