// shim/report/FORMAT.md names every figure of shim/support/device_figures.def and site_figures.def,
// in the lists' order, and no figure the lists lack: the lists generate the report's fields, and
// the document is their contract.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "shim/support/figures.h"

namespace vramshim::support {
namespace {

std::string read_format_md() {
  std::ifstream in("shim/report/FORMAT.md");
  EXPECT_TRUE(in.good()) << "shim/report/FORMAT.md is not among the test's data files";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of the example's array `"name": [` up to the line that closes it ("  ]").
std::string example_array(const std::string& format, const std::string& name) {
  const size_t start = format.find("\"" + name + "\": [");
  if (start == std::string::npos) return "";
  const size_t end = format.find("\n  ]", start);
  return format.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The keys ("key": …) of an example, in order, without the array's own name.
std::vector<std::string> keys_of(const std::string& example) {
  static const std::regex key("\"([a-z_]+)\":");
  std::vector<std::string> keys;
  for (auto it = std::sregex_iterator(example.begin(), example.end(), key);
       it != std::sregex_iterator(); ++it) {
    keys.push_back((*it)[1]);
  }
  if (!keys.empty()) keys.erase(keys.begin());
  return keys;
}

TEST(FiguresFormat, TheDevicesExampleHasEveryDeviceFigureInOrder) {
  std::vector<std::string> expected = {"device"};
  for (const DeviceFigureInfo& figure : kDeviceFigures) expected.push_back(figure.name);
  EXPECT_EQ(keys_of(example_array(read_format_md(), "devices")), expected);
}

TEST(FiguresFormat, TheSitesExampleHasEverySiteFigureInOrder) {
  std::vector<std::string> expected = {"stack", "kind"};
  for (const SiteFigureInfo& figure : kSiteFigures) expected.push_back(figure.name);
  EXPECT_EQ(keys_of(example_array(read_format_md(), "sites")), expected);
}

TEST(FiguresFormat, MergedReportsRanksNameEverySiteFigure) {
  const std::string format = read_format_md();
  const size_t ranks = format.find("`\"ranks\"`");
  ASSERT_NE(ranks, std::string::npos) << "FORMAT.md does not describe \"ranks\"";
  const std::string entry = format.substr(ranks, format.find("\n- ", ranks) - ranks);
  for (const SiteFigureInfo& figure : kSiteFigures) {
    EXPECT_NE(entry.find("\"" + std::string(figure.name) + "\""), std::string::npos)
        << "FORMAT.md's \"ranks\" entry does not name " << figure.name;
  }
}

}  // namespace
}  // namespace vramshim::support
