#include "shim/report/report_pattern.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST(ReportPattern, ARankThatIsNotAPlainNameIsLeftOut) {
  ReportPatternValues values = kValues;
  for (const char* rank : {"../../etc", "a/b", "..", ".", ""}) {
    values.rank = rank;
    EXPECT_EQ(expand_report_pattern("/out/mem.%r.json", values), "/out/mem..json") << rank;
  }
  values.rank = "node-3_a.1";
  EXPECT_EQ(expand_report_pattern("/out/mem.%r.json", values), "/out/mem.node-3_a.1.json");
}

TEST(ReportPattern, ARelativePatternIsTakenFromTheWorkingDirectoryNow) {
  const std::string directory = std::string(testing::TempDir()) + "/100%p";
  mkdir(directory.c_str(), 0755);
  char before[4096];
  ASSERT_NE(getcwd(before, sizeof(before)), nullptr);
  ASSERT_EQ(chdir(directory.c_str()), 0);
  const std::string pattern = absolute_report_pattern("mem.%p.json");
  char here[4096];
  ASSERT_NE(getcwd(here, sizeof(here)), nullptr);
  ASSERT_EQ(chdir(before), 0);
  EXPECT_EQ(expand_report_pattern(pattern, kValues), std::string(here) + "/mem.4242.json");
  EXPECT_EQ(absolute_report_pattern("/out/mem.json"), "/out/mem.json");
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
