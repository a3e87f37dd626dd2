// Leaks 3 MiB in plugin_a_leak; plugin_host unloads it afterwards.
#include "tests/integration/programs/plugin.h"

extern "C" {

__attribute__((noinline)) void plugin_a_leak(PluginAlloc alloc) {
  CUdeviceptr ptr = 0;
  alloc(&ptr, 3 << 20);
}

void plugin_run(PluginAlloc alloc, PluginFree) { plugin_a_leak(alloc); }

}  // extern "C"
