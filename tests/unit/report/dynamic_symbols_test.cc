// The name of a frame in a report is the one dladdr gives its address: DynamicSymbols' binary
// searches over each loaded object's dynamic symbols are checked against dladdr at random
// addresses of every loaded object's code (the C and C++ runtimes, the loader, the vDSO), and
// name_frames names only addresses of the object loaded at their load bias.
#include "shim/report/dynamic_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vramshim::report {
namespace {

struct Comparison {
  std::mt19937_64 random{11};
  size_t objects = 0;
  size_t compared = 0;
  std::vector<std::string> differences;
};

std::string shown(const char* name) { return name != nullptr ? name : "(none)"; }

int compare_object(dl_phdr_info* info, size_t, void* data) {
  Comparison& comparison = *static_cast<Comparison*>(data);
  const DynamicSymbols symbols(*info);
  ++comparison.objects;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0 || header.p_memsz == 0) continue;
    for (int probe = 0; probe < 20000; ++probe) {
      const uint64_t address =
          info->dlpi_addr + header.p_vaddr + comparison.random() % header.p_memsz;
      Dl_info found{};
      const char* expected =
          dladdr(reinterpret_cast<void*>(address), &found) != 0 ? found.dli_sname : nullptr;
      const char* name = symbols.name_of(address);
      ++comparison.compared;
      if (shown(name) != shown(expected) && comparison.differences.size() < 10) {
        comparison.differences.push_back(std::string(info->dlpi_name) + " at " +
                                         std::to_string(address - info->dlpi_addr) + ": " +
                                         shown(name) + ", dladdr " + shown(expected));
      }
    }
  }
  return 0;
}

TEST(DynamicSymbols, NamesEveryAddressOfCodeAsDladdrDoes) {
  Comparison comparison;
  dl_iterate_phdr(compare_object, &comparison);
  EXPECT_GE(comparison.objects, 4u);  // the test, libstdc++, libc, the loader
  EXPECT_GT(comparison.compared, 80000u);
  EXPECT_TRUE(comparison.differences.empty()) << ::testing::PrintToString(comparison.differences);
}

int load_bias_of_libc(dl_phdr_info* info, size_t, void* data) {
  if (std::strstr(info->dlpi_name, "libc.so") == nullptr) return 0;
  *static_cast<uint64_t*>(data) = info->dlpi_addr;
  return 1;
}

TEST(DynamicSymbols, NameFramesNamesTheFramesOfLoadedObjectsOnly) {
  uint64_t libc = 0;
  ASSERT_NE(dl_iterate_phdr(load_bias_of_libc, &libc), 0);
  const auto getpid_address = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "getpid"));
  ASSERT_NE(getpid_address, 0u);
  FramesByLoad frames;
  frames[libc] = {{0, getpid_address}, {2, 1}};  // an address outside libc's segments
  frames[libc + 4096] = {{1, getpid_address}};   // no object is loaded there
  std::vector<std::optional<std::string>> names(3);
  name_frames(frames, &names);
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(getpid_address), &info), 0);
  EXPECT_EQ(names[0], std::optional<std::string>(info.dli_sname));
  EXPECT_FALSE(names[1]);
  EXPECT_FALSE(names[2]);
}

}  // namespace
}  // namespace vramshim::report
