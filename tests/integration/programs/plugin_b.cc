// Loaded where libplugin_a.so was: its padding function lies at the addresses of a's code.
#include "tests/integration/programs/plugin.h"

extern "C" {

__attribute__((noinline)) int plugin_b_padding(int x) {
  int sum = 0;
  for (int i = 0; i < x; ++i) sum += i * x ^ (sum >> 3);
  return sum;
}

__attribute__((noinline)) void plugin_b_churn(PluginAlloc alloc, PluginFree release) {
  CUdeviceptr ptr = 0;
  if (alloc(&ptr, 1 << 20) == CUDA_SUCCESS) release(ptr);
}

void plugin_run(PluginAlloc alloc, PluginFree release) {
  plugin_b_padding(3);
  plugin_b_churn(alloc, release);
}

}  // extern "C"
