#include "shim/attribution/module_history.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/unit/attribution/allocation_scenarios.h"

namespace vramshim::attribution {
namespace {

// The file of the scenarios' library, which the test copies: each copy, loaded and unloaded in
// turn, is a distinct load (another file, another name), as a library that lands at a new address.
std::string scenarios_library() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&leak_three_blocks), &info), 0);
  return info.dli_fname;
}

TEST(ModuleHistory, RefreshComparesAboutTheMappedObjectsWhateverTheLoadsSeen) {
  const std::filesystem::path directory =
      std::filesystem::path(std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR")
                                                                  : "/tmp") /
      ("module_history." + std::to_string(getpid()));
  std::filesystem::create_directories(directory);
  const std::string original = scenarios_library();

  ModuleHistory history;
  history.refresh();
  const size_t loads_before = history.loads().size();
  constexpr int kCycles = 2000;
  std::string path;
  for (int i = 0; i < kCycles; ++i) {
    path = (directory / ("libcycle" + std::to_string(i) + ".so")).string();
    std::filesystem::copy_file(original, path);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    history.refresh();
    size_t mapped = 0;
    for (uint32_t load = 0; load < history.loads().size(); ++load)
      mapped += history.is_loaded(load);
    // Each object mapped is compared with the loads that share its hash: about one, not the
    // thousands seen before.
    ASSERT_LE(history.last_refresh_comparisons(), 2 * mapped) << "cycle " << i;

    // Lookups stay right: an address of this copy names this load, mapped; earlier copies not.
    void* symbol = dlsym(handle, "leak_three_blocks");
    ASSERT_NE(symbol, nullptr);
    const int32_t load = history.module_of(reinterpret_cast<uint64_t>(symbol));
    ASSERT_GE(load, 0);
    EXPECT_EQ(history.loads()[load].path, path);
    EXPECT_TRUE(history.is_loaded(load));
    if (i > 0) {
      EXPECT_FALSE(history.is_loaded(load - 1));
    }
    dlclose(handle);
    std::filesystem::remove(path);
  }
  history.refresh();
  EXPECT_EQ(history.loads().size(), loads_before + kCycles);
  EXPECT_FALSE(history.is_loaded(static_cast<uint32_t>(history.loads().size() - 1)));
  EXPECT_GT(history.memory_bytes(), kCycles * sizeof(report::LoadedModule));
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace vramshim::attribution
