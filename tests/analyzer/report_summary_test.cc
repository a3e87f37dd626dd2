// The short summary printed after `vramshim run` and `vramshim demo`.
#include "analyzer/render/report_summary.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vramshim::analyzer {
namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(ReportSummary, NamesTheBiggestHolderAndTheLeaks) {
  const std::string path = temp_path("summary.json");
  ASSERT_EQ(std::system(("tests/analyzer/fixture_report_bin --out " + path).c_str()), 0);
  std::ostringstream out;
  render_summary(out, path, 2);
  const std::string text = out.str();
  const auto peak = text.find("held at the peak:\n");
  const auto leaks = text.find("still allocated at the end (leaks?):\n");
  ASSERT_NE(peak, std::string::npos) << text;
  ASSERT_NE(leaks, std::string::npos) << text;
  // The largest holder at the peak comes first, with its source line.
  const auto first = text.find('\n', peak) + 1;
  const std::string first_line = text.substr(first, text.find('\n', first) - first);
  EXPECT_EQ(first_line.find("16.0 MiB  init_optimizer_state() (tests/analyzer/fixture_report.cc:"),
            3u)
      << first_line;
  EXPECT_NE(text.find("3.0 MiB  leak_in_model_forward()", leaks), std::string::npos) << text;
  EXPECT_NE(text.find("vramshim html " + path), std::string::npos) << text;
}

TEST(ReportSummary, RejectsABadReport) {
  std::ostringstream out;
  EXPECT_THROW(render_summary(out, temp_path("no-such-report.json")), std::runtime_error);
}

}  // namespace
}  // namespace vramshim::analyzer
