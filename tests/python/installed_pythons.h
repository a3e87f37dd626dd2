// The CPython interpreters the Python tests run under: the system's, and pyenv's 3.10-3.15 where
// they are installed (3.14 and 3.15: tools/install-sid-pythons.sh).
#pragma once

#include <string>
#include <vector>

namespace vramshim::testing {

std::vector<std::string> installed_pythons();

// A gtest parameter name for an interpreter's path ("_root__pyenv_versions_3_12_1_bin_python3").
std::string test_name_of_python(const std::string& path);

}  // namespace vramshim::testing
