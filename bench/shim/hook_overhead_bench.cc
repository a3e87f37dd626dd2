// What a hook adds to a call it passes through, without the simulated driver's
// own cost in the way: the hooks are linked in and their real functions are set to trivial
// stand-ins. BM_Direct calls the stand-ins; BM_ThroughHooks calls the exported
// cuMemAlloc_v2/cuMemFree_v2 with VRAMSHIM_DISABLE=1, the pure pass-through path (count, check,
// forward).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include "shim/intercept/hook_declarations.h"

namespace {

__attribute__((noinline)) CUresult stand_in_alloc(CUdeviceptr* dptr, size_t bytes) {
  *dptr = bytes;
  return CUDA_SUCCESS;
}

__attribute__((noinline)) CUresult stand_in_free(CUdeviceptr ptr) {
  benchmark::DoNotOptimize(ptr);
  return CUDA_SUCCESS;
}

void set_up() {
  setenv("VRAMSHIM_DISABLE", "1", 1);
  using vramshim::intercept::HookId;
  vramshim::intercept::note_real_function(HookId::cuMemAlloc_v2,
                                          reinterpret_cast<void*>(&stand_in_alloc));
  vramshim::intercept::note_real_function(HookId::cuMemFree_v2,
                                          reinterpret_cast<void*>(&stand_in_free));
}

template <typename Alloc, typename Free>
void run_pairs(benchmark::State& state, Alloc alloc, Free free) {
  set_up();
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    alloc(&ptr, 4096);
    free(ptr);
    benchmark::DoNotOptimize(ptr);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // calls
}

void BM_Direct(benchmark::State& state) {
  // Through function pointers, as a program calling the driver's exports would.
  volatile auto alloc = &stand_in_alloc;
  volatile auto free = &stand_in_free;
  run_pairs(state, alloc, free);
}

void BM_ThroughHooks(benchmark::State& state) {
  run_pairs(state, &::cuMemAlloc_v2, &::cuMemFree_v2);
}

BENCHMARK(BM_Direct);
BENCHMARK(BM_ThroughHooks);

}  // namespace

BENCHMARK_MAIN();
