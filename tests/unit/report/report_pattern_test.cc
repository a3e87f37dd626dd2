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

TEST(ReportPattern, TheCrashReportGoesBesideTheReportsName) {
  EXPECT_EQ(crash_report_path("vramshim.4242.json"), "vramshim.4242.crash.json");
  EXPECT_EQ(crash_report_path("/out/r3.json"), "/out/r3.crash.json");
  EXPECT_EQ(crash_report_path("/out/mem"), "/out/mem.crash");
  EXPECT_EQ(crash_report_path("mem.json.gz"), "mem.json.gz.crash");
}

}  // namespace
}  // namespace vramshim::report
