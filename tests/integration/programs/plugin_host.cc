// Loads ./libplugin_a.so by a relative name (run it in the plugins' directory), which leaks 3 MiB,
// unloads it, then loads ./libplugin_b.so, which allocates and frees 1 MiB and stays loaded: b
// usually takes a's addresses. With argv[1] = "keep", loads a only and keeps it.
#include <cuda.h>
#include <dlfcn.h>

#include <cstring>

#include "tests/integration/programs/plugin.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

namespace {

void run_plugin(const char* path, bool unload) {
  void* plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK_TRUE(plugin != nullptr);
  auto run = reinterpret_cast<PluginRun>(dlsym(plugin, "plugin_run"));
  CHECK_TRUE(run != nullptr);
  run(&cuMemAlloc_v2, &cuMemFree_v2);
  if (unload) CHECK_TRUE(dlclose(plugin) == 0);
}

}  // namespace

int main(int argc, char** argv) {
  use_primary_context();
  const bool keep = argc > 1 && std::strcmp(argv[1], "keep") == 0;
  run_plugin("./libplugin_a.so", !keep);
  if (!keep) run_plugin("./libplugin_b.so", false);
  return 0;
}
