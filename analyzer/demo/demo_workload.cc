// The workload `vramshim demo` runs under the shim: a small training-like loop that loads
// "weights", allocates and frees activations and gradients every step, and leaks a buffer per step
// in cache_activations_for_debugging(). It reaches the driver as JAX and TensorFlow do (dlopen +
// dlsym of libcuda.so.1), so it runs on a real GPU and on the simulated driver alike. Midway it
// prints "midway" and waits for a line on stdin, while the demo flushes its pool from outside.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct Driver {
  CUresult (*init)(unsigned int);
  CUresult (*primary_retain)(CUcontext*, CUdevice);
  CUresult (*set_current)(CUcontext);
  CUresult (*alloc)(CUdeviceptr*, size_t);
  CUresult (*free)(CUdeviceptr);
  CUresult (*memset)(CUdeviceptr, unsigned char, size_t);
  CUresult (*synchronize)();
};

Driver g_driver;
constexpr size_t kMiB = size_t{1} << 20;
constexpr int kSteps = 12;
constexpr int kLayers = 6;

template <typename Fn>
void resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) {
    std::fprintf(stderr, "demo_workload: the driver has no %s\n", name);
    std::exit(2);
  }
}

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "demo_workload: %s failed (CUresult %d)\n", what,
                 static_cast<int>(result));
    std::exit(2);
  }
}

void zero(CUdeviceptr ptr, size_t bytes) { check(g_driver.memset(ptr, 0, bytes), "cuMemsetD8"); }

}  // namespace

// Named, never-inlined functions that allocate themselves: they are what the report names.
__attribute__((noinline)) std::vector<CUdeviceptr> load_model_weights() {
  std::vector<CUdeviceptr> weights(kLayers);
  for (CUdeviceptr& weight : weights) {
    check(g_driver.alloc(&weight, 16 * kMiB), "cuMemAlloc");
    zero(weight, 16 * kMiB);
  }
  return weights;
}

__attribute__((noinline)) std::vector<CUdeviceptr> forward(int step) {
  std::vector<CUdeviceptr> activations(kLayers);
  for (int layer = 0; layer < kLayers; ++layer) {
    const size_t bytes = (12 + 2 * ((layer + step) % 4)) * kMiB;
    check(g_driver.alloc(&activations[layer], bytes), "cuMemAlloc");
    zero(activations[layer], bytes);
  }
  return activations;
}

__attribute__((noinline)) void backward(std::vector<CUdeviceptr>& activations) {
  for (auto it = activations.rbegin(); it != activations.rend(); ++it) {
    CUdeviceptr gradient = 0;
    check(g_driver.alloc(&gradient, 2 * kMiB), "cuMemAlloc");
    zero(gradient, 2 * kMiB);
    check(g_driver.free(*it), "cuMemFree");
    check(g_driver.free(gradient), "cuMemFree");
  }
  activations.clear();
}

// The leak the demo finds: a "debugging cache" that keeps one activation per step, forever.
__attribute__((noinline)) void cache_activations_for_debugging(std::vector<CUdeviceptr>& cache) {
  CUdeviceptr kept = 0;
  check(g_driver.alloc(&kept, 3 * kMiB), "cuMemAlloc");
  zero(kept, 3 * kMiB);
  cache.push_back(kept);
}

int main() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "demo_workload: cannot load libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  resolve(handle, "cuInit", &g_driver.init);
  resolve(handle, "cuDevicePrimaryCtxRetain", &g_driver.primary_retain);
  resolve(handle, "cuCtxSetCurrent", &g_driver.set_current);
  resolve(handle, "cuMemAlloc_v2", &g_driver.alloc);
  resolve(handle, "cuMemFree_v2", &g_driver.free);
  resolve(handle, "cuMemsetD8_v2", &g_driver.memset);
  resolve(handle, "cuCtxSynchronize", &g_driver.synchronize);
  check(g_driver.init(0), "cuInit");
  CUcontext context;
  check(g_driver.primary_retain(&context, 0), "cuDevicePrimaryCtxRetain");
  check(g_driver.set_current(context), "cuCtxSetCurrent");

  std::vector<CUdeviceptr> weights = load_model_weights();
  std::vector<CUdeviceptr> debug_cache;
  for (int step = 1; step <= kSteps; ++step) {
    std::vector<CUdeviceptr> activations = forward(step);
    cache_activations_for_debugging(debug_cache);
    backward(activations);
    check(g_driver.synchronize(), "cuCtxSynchronize");
    std::printf("step %d done\n", step);
    if (step == kSteps / 2) {
      std::printf("midway\n");
      std::fflush(stdout);
      std::string line;
      std::getline(std::cin, line);  // the demo flushes the pool, then answers
    }
    std::fflush(stdout);
  }
  for (CUdeviceptr weight : weights) check(g_driver.free(weight), "cuMemFree");
  return 0;  // debug_cache is never freed: the report's leak
}
