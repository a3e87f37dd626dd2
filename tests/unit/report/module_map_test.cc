#include "shim/report/module_map.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace vramshim::report {
namespace {

TEST(ModuleMap, MapsAddressesToTheirObjects) {
  const ModuleMap map = ModuleMap::of_this_process();
  ASSERT_GE(map.modules().size(), 2u);
  const int libc = map.module_of(reinterpret_cast<uint64_t>(&fopen));
  ASSERT_GE(libc, 0);
  EXPECT_NE(map.modules()[libc].path.find("libc.so"), std::string::npos);
  const int self = map.module_of(reinterpret_cast<uint64_t>(&ModuleMap::of_this_process));
  ASSERT_GE(self, 0);
  EXPECT_NE(self, libc);
  EXPECT_NE(map.modules()[self].path.find("module_map_test"), std::string::npos);
  EXPECT_EQ(map.module_of(8), -1);
}

// The build-id read from memory matches the one the ELF file carries on disk.
TEST(ModuleMap, ReadsGnuBuildIds) {
  const ModuleMap map = ModuleMap::of_this_process();
  const LoadedModule& libc = map.modules()[map.module_of(reinterpret_cast<uint64_t>(&fopen))];
  ASSERT_EQ(libc.build_id.size(), 40u);
  const std::string command = "readelf -n '" + libc.path + "' 2>/dev/null";
  FILE* readelf = popen(command.c_str(), "r");
  ASSERT_NE(readelf, nullptr);
  std::string output;
  char chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof(chunk), readelf)) > 0) output.append(chunk, got);
  pclose(readelf);
  if (output.empty()) GTEST_SKIP() << "readelf is not installed";
  EXPECT_NE(output.find("Build ID: " + libc.build_id), std::string::npos) << output;
}

}  // namespace
}  // namespace vramshim::report
