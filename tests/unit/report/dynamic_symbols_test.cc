// The name of a frame in a report is the one dladdr gives its address: DynamicSymbols' binary
// searches over each loaded object's dynamic symbols are checked against dladdr at random
// addresses of every loaded object's code (the C and C++ runtimes, the loader, the vDSO), and
// name_frames names only the frames of loads still there.
#include "shim/report/dynamic_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <cstdint>
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
  // With an object that has only the old hash table among them.
  void* sysv = dlopen("tests/unit/report/libsysv_hash_library.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(sysv, nullptr) << dlerror();
  Comparison comparison;
  dl_iterate_phdr(compare_object, &comparison);
  EXPECT_GE(comparison.objects, 4u);  // the test, libstdc++, libc, the loader
  EXPECT_GT(comparison.compared, 80000u);
  EXPECT_TRUE(comparison.differences.empty()) << ::testing::PrintToString(comparison.differences);
  dlclose(sysv);
}

int name_in_sysv_library(dl_phdr_info* info, size_t, void* data) {
  if (std::strstr(info->dlpi_name, "libsysv_hash_library.so") == nullptr) return 0;
  auto& [address, name] = *static_cast<std::pair<uint64_t, std::string>*>(data);
  const char* found = DynamicSymbols(*info).name_of(address);
  name = found != nullptr ? found : "(none)";
  return 1;
}

// DT_HASH without DT_GNU_HASH: an absent tag is no table (it once read the ELF header as one,
// and named nothing in such objects).
TEST(DynamicSymbols, NamesTheFunctionsOfAnObjectWithOnlyTheOldHashTable) {
  void* sysv = dlopen("tests/unit/report/libsysv_hash_library.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(sysv, nullptr) << dlerror();
  void* function = dlsym(sysv, "sysv_function_two");
  ASSERT_NE(function, nullptr);
  std::pair<uint64_t, std::string> query{reinterpret_cast<uint64_t>(function) + 2, ""};
  ASSERT_NE(dl_iterate_phdr(name_in_sysv_library, &query), 0);
  EXPECT_EQ(query.second, "sysv_function_two");
  dlclose(sysv);
}

// libc's load as the module map sees it.
int libc_load(dl_phdr_info* info, size_t, void* data) {
  if (std::strstr(info->dlpi_name, "libc.so") == nullptr) return 0;
  auto& load = *static_cast<std::pair<uint64_t, LoadFrames>*>(data);
  load.first = info->dlpi_addr;
  load.second.loader_name = info->dlpi_name;
  load.second.begin = UINT64_MAX;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    load.second.begin = std::min<uint64_t>(load.second.begin, info->dlpi_addr + header.p_vaddr);
    load.second.end =
        std::max<uint64_t>(load.second.end, info->dlpi_addr + header.p_vaddr + header.p_memsz);
  }
  return 1;
}

// Only the frames of a load still there are named: the object at the load bias must have the
// load's name and extent (another may have taken an unloaded one's place), and hold the address.
TEST(DynamicSymbols, NameFramesNamesTheFramesOfLoadsStillThereOnly) {
  std::pair<uint64_t, LoadFrames> libc;
  ASSERT_NE(dl_iterate_phdr(libc_load, &libc), 0);
  const auto getpid_address = reinterpret_cast<uint64_t>(dlsym(RTLD_DEFAULT, "getpid"));
  ASSERT_NE(getpid_address, 0u);
  FramesByLoad frames;
  frames[libc.first] = libc.second;
  frames[libc.first].frames = {{0, getpid_address}, {2, 1}};  // 1: outside libc's segments
  LoadFrames elsewhere = libc.second;
  elsewhere.frames = {{1, getpid_address}};
  frames[libc.first + 4096] = elsewhere;  // no object is loaded there
  std::vector<std::optional<std::string>> names(3);
  name_frames(frames, &names);
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(getpid_address), &info), 0);
  EXPECT_EQ(names[0], std::optional<std::string>(info.dli_sname));
  EXPECT_FALSE(names[1]);
  EXPECT_FALSE(names[2]);

  // Another object at libc's load bias: another name, or another extent.
  FramesByLoad other_name;
  other_name[libc.first] = libc.second;
  other_name[libc.first].loader_name += ".old";
  other_name[libc.first].frames = {{0, getpid_address}};
  FramesByLoad other_extent;
  other_extent[libc.first] = libc.second;
  other_extent[libc.first].end += 4096;
  other_extent[libc.first].frames = {{0, getpid_address}};
  for (const FramesByLoad* load : {&other_name, &other_extent}) {
    std::vector<std::optional<std::string>> none(1);
    name_frames(*load, &none);
    EXPECT_FALSE(none[0]);
  }
}

}  // namespace
}  // namespace vramshim::report
