#include "shim/report/report_pattern.h"

#include <gtest/gtest.h>

namespace vramshim::report {
namespace {

const ReportPatternValues kValues{4242, "node17", "3", 1795980000, 7};

TEST(ReportPattern, ExpandsEveryField) {
  EXPECT_EQ(expand_report_pattern("vramshim.%p.json", kValues), "vramshim.4242.json");
  EXPECT_EQ(expand_report_pattern("/out/%h-r%r-%t-%n.json", kValues),
            "/out/node17-r3-1795980000-7.json");
}

TEST(ReportPattern, PercentPercentIsALiteralPercentAndUnknownSequencesStay) {
  EXPECT_EQ(expand_report_pattern("100%%-%p", kValues), "100%-4242");
  EXPECT_EQ(expand_report_pattern("a%xb%", kValues), "a%xb%");
  EXPECT_EQ(expand_report_pattern("%%p", kValues), "%p");
}

TEST(ReportPattern, RankIsZeroWhenNoRankVariableIsSet) {
  ReportPatternValues values = kValues;
  values.rank = std::nullopt;
  EXPECT_EQ(expand_report_pattern("r%r.json", values), "r0.json");
}

TEST(ReportPattern, PlainPathsAreUnchanged) {
  EXPECT_EQ(expand_report_pattern("report.json", kValues), "report.json");
  EXPECT_EQ(expand_report_pattern("", kValues), "");
}

TEST(ReportPattern, OutOfMemoryAndCrashReportsGoBesideTheReportsName) {
  EXPECT_EQ(report_variant("vramshim.4242.json", "crash"), "vramshim.4242.crash.json");
  EXPECT_EQ(report_variant("/out/r3.json", "oom"), "/out/r3.oom.json");
  EXPECT_EQ(report_variant("/out/mem", "crash"), "/out/mem.crash");
  EXPECT_EQ(report_variant("mem.json.gz", "oom"), "mem.json.gz.oom");
  EXPECT_EQ(report_variant("/out.json/mem", "oom"), "/out.json/mem.oom");
}

}  // namespace
}  // namespace vramshim::report
