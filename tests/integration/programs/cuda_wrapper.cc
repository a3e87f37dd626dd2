// A wrapper library of the kind profilers and virtualizers ship: it defines a driver function and
// calls "the next one" found with dlsym(RTLD_NEXT, …). Under the shim this must reach the driver,
// not recurse.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>

extern "C" {

std::atomic<int> wrapper_alloc_calls{0};

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  wrapper_alloc_calls.fetch_add(1);
  static auto next =
      reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(dlsym(RTLD_NEXT, "cuMemAlloc_v2"));
  if (next == nullptr || next == &cuMemAlloc_v2) return CUDA_ERROR_NOT_FOUND;
  return next(dptr, bytesize);
}

__attribute__((visibility("default"))) int wrapper_calls() { return wrapper_alloc_calls.load(); }
}
