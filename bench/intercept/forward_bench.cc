// Issue 2 figure: the cost the shim adds to a forwarded cuMemAlloc_v2 + cuMemFree_v2 pair, against the
// simulated driver with no delay. The shim is loaded with its pool and stack capture off, so each call
// goes through the hook to the driver; the baseline calls the driver's own functions.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);

struct Driver {
  Alloc alloc;
  Free free;
};

std::string absolute(const char* runfile) {
  char resolved[PATH_MAX];
  if (realpath(runfile, resolved) == nullptr) {
    std::fprintf(stderr, "missing runfile %s (run with bazel run)\n", runfile);
    std::exit(1);
  }
  return resolved;
}

void* open_or_die(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror());
    std::exit(1);
  }
  return handle;
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

const Driver& fake() {
  static const Driver driver = [] {
    void* handle = open_or_die(absolute("tests/fakecuda/libcuda.so.1"));
    auto init = symbol<CUresult (*)(unsigned)>(handle, "cuInit");
    auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(handle, "cuDevicePrimaryCtxRetain");
    auto set_current = symbol<CUresult (*)(CUcontext)>(handle, "cuCtxSetCurrent");
    CUcontext context;
    if (init(0) != CUDA_SUCCESS || retain(&context, 0) != CUDA_SUCCESS ||
        set_current(context) != CUDA_SUCCESS) {
      std::fprintf(stderr, "simulated driver failed to start\n");
      std::exit(1);
    }
    return Driver{symbol<Alloc>(handle, "cuMemAlloc_v2"), symbol<Free>(handle, "cuMemFree_v2")};
  }();
  return driver;
}

const Driver& shim() {
  static const Driver driver = [] {
    fake();  // the driver is loaded (RTLD_LOCAL, as XLA loads it) and its context current
    setenv("VRAMSHIM_POOL", "off", 1);
    setenv("VRAMSHIM_STACKS", "off", 1);
    setenv("VRAMSHIM_SOCKET", "off", 1);
    setenv("VRAMSHIM_REPORT", "off", 1);
    void* handle = open_or_die(absolute("shim/libvramshim.so"));
    return Driver{symbol<Alloc>(handle, "cuMemAlloc_v2"), symbol<Free>(handle, "cuMemFree_v2")};
  }();
  return driver;
}

void run_pairs(benchmark::State& state, const Driver& driver) {
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    if (driver.alloc(&ptr, 4096) != CUDA_SUCCESS || driver.free(ptr) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      break;
    }
    benchmark::DoNotOptimize(ptr);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // calls
}

void BM_DriverDirectPair(benchmark::State& state) { run_pairs(state, fake()); }
void BM_ThroughShimForwardedPair(benchmark::State& state) { run_pairs(state, shim()); }

BENCHMARK(BM_DriverDirectPair);
BENCHMARK(BM_ThroughShimForwardedPair);

}  // namespace

BENCHMARK_MAIN();
