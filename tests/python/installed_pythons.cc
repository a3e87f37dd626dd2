#include "tests/python/installed_pythons.h"

#include <glob.h>

#include <cctype>

namespace vramshim::testing {

std::vector<std::string> installed_pythons() {
  std::vector<std::string> found = {"/usr/bin/python3"};
  glob_t matches;
  if (glob("/root/.pyenv/versions/3.1[0-5].*/bin/python3", 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) found.push_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  return found;
}

std::string test_name_of_python(const std::string& path) {
  std::string name;
  for (char c : path) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

}  // namespace vramshim::testing
