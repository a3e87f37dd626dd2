// README.md's environment table documents every variable of the configuration table, each with the
// default its warnings name, and nothing else.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "shim/control/config.h"

namespace vramshim::control {
namespace {

// The cells of a Markdown table row "| a | b\|c | d |", trimmed; "\|" is a '|' inside a cell.
std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      const size_t first = cell.find_first_not_of(' ');
      const size_t last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

// The rows "| `VRAMSHIM_NAME…` | meaning | default |" of README.md's "Environment variables"
// section: each variable's name and the default cells of its rows.
std::map<std::string, std::vector<std::string>> readme_defaults() {
  std::ifstream readme("README.md");
  EXPECT_TRUE(readme.is_open()) << "README.md is not among the test's data";
  std::map<std::string, std::vector<std::string>> defaults;
  bool in_section = false;
  std::string line;
  while (std::getline(readme, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Environment variables";
    if (!in_section || line.rfind("| `VRAMSHIM_", 0) != 0) continue;
    const std::vector<std::string> cells = cells_of(line);
    EXPECT_EQ(cells.size(), 3u) << line;
    if (cells.size() != 3) continue;
    const std::string& variable = cells[0];  // `NAME=VALUES` or `NAME`
    const std::string name = variable.substr(1, variable.find_first_of("=`", 1) - 1);
    defaults[name].push_back(cells[2]);
  }
  return defaults;
}

TEST(ReadmeEnvironmentTest, ListsEveryVariableOnceWithTheDefaultItsWarningNames) {
  const std::map<std::string, std::vector<std::string>> documented = readme_defaults();
  for (const ConfigVariable& variable : config_variables()) {
    const auto row = documented.find(variable.name);
    if (row == documented.end()) {
      ADD_FAILURE() << variable.name << " has no row in README.md";
      continue;
    }
    EXPECT_EQ(row->second, std::vector<std::string>{variable.default_value}) << variable.name;
  }
}

TEST(ReadmeEnvironmentTest, ListsNoVariableTheShimDoesNotRead) {
  const std::map<std::string, std::vector<std::string>> documented = readme_defaults();
  EXPECT_FALSE(documented.empty());
  for (const auto& [name, defaults] : documented) {
    bool read = false;
    for (const ConfigVariable& variable : config_variables()) read = read || name == variable.name;
    EXPECT_TRUE(read) << name << " is in README.md but not in config_variables()";
  }
}

}  // namespace
}  // namespace vramshim::control
