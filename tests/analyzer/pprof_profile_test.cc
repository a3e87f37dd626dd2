// A report as a pprof profile, at the format's edges: the report's time held within time_nanos,
// and samples that would list a stack per rank of a merged report bounded.
#include "analyzer/export/pprof_profile.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "analyzer/export/profile.pb.h"
#include "analyzer/model/frame_table.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

std::string gunzip(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[65536];
  int result = Z_OK;
  while (result == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    result = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  inflateEnd(&stream);
  EXPECT_EQ(result, Z_STREAM_END);
  return out;
}

std::string profile_of(const Report& report) {
  Symbolizer symbolizer(nullptr);
  const FrameTable table(report, symbolizer, HidePatterns{HidePatterns::defaults()});
  return pprof_profile(report, table);
}

// A site of `ranks` processes, its stack `frames` Python frames deep.
Report merged_report(size_t ranks, size_t frames) {
  Report report;
  report.merged_from.resize(ranks);
  Stack stack;
  for (size_t i = 0; i < frames; ++i) {
    Frame frame;
    frame.python = true;
    frame.file = "train.py";
    frame.line = static_cast<int64_t>(i + 1);
    frame.function = "f" + std::to_string(i);
    report.frames.push_back(frame);
    stack.frames.push_back(static_cast<uint32_t>(i));
  }
  report.stacks.push_back(stack);
  Site site;
  site.stack = 0;
  site.kind = "device";
  for (size_t r = 0; r < ranks; ++r) {
    RankFigures share;
    share.process = static_cast<int64_t>(r);
    share.live_bytes = 1;
    site.ranks.push_back(share);
  }
  report.sites.push_back(site);
  return report;
}

// The reader takes times up to 1e11 s, past the 2^63 ns time_nanos holds (the cast was undefined,
// and wrote INT64_MIN).
TEST(PprofProfile, AReportTimePastTimeNanosIsHeldAtItsMost) {
  Report report = merged_report(1, 1);
  report.process.report_time = 1e11;
  perftools::profiles::Profile profile;
  ASSERT_TRUE(profile.ParseFromString(gunzip(profile_of(report))));
  EXPECT_EQ(profile.time_nanos(), INT64_MAX);
  report.process.report_time = 1.5;
  ASSERT_TRUE(profile.ParseFromString(gunzip(profile_of(report))));
  EXPECT_EQ(profile.time_nanos(), 1500000000);
}

// Each sample lists its whole stack, one per site and rank: 8,193 ranks of a 4,096-frame stack
// are refused before any is listed.
TEST(PprofProfile, TheSamplesStackFramesAreBounded) {
  try {
    profile_of(merged_report(8193, 4096));
    ADD_FAILURE() << "exported";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "a pprof profile of this report would list more than 33554432 stack frames in "
                 "its samples (one sample per site and rank, each with its whole stack)");
  }
}

}  // namespace
}  // namespace vramshim::analyzer
