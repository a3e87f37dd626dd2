// cuMemAlloc/cuMemFree pairs through the driver API of a program linked with -lcuda (its NEEDED
// entry is libcuda.so.1, so the shim's exported hooks serve it), for check 2 of tests/gpu/run.sh.
// Prints:
//   driver_alloc_loop pairs=N bytes=S us_per_pair=X
// Contains no kernels, so it also runs against tests/fakecuda on a machine without a GPU.
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

static bool check(CUresult status, const char* what) {
  if (status == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(status, &name);
  std::fprintf(stderr, "driver_alloc_loop: %s failed: %s\n", what, name != nullptr ? name : "?");
  return false;
}

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 10000;
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
  if (pairs <= 0 || bytes == 0) {
    std::fprintf(stderr, "usage: driver_alloc_loop [PAIRS] [BYTES]\n");
    return 2;
  }
  CUdevice device;
  CUcontext context;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(context), "cuCtxSetCurrent"))
    return 1;

  // One block written and read back: a pointer the pool hands out must be usable device memory.
  CUdeviceptr block = 0;
  if (!check(cuMemAlloc(&block, bytes), "cuMemAlloc")) return 1;
  if (!check(cuMemsetD8(block, 0x5a, bytes), "cuMemsetD8")) return 1;
  unsigned char last = 0;
  if (!check(cuMemcpyDtoH(&last, block + bytes - 1, 1), "cuMemcpyDtoH")) return 1;
  if (last != 0x5a) {
    std::fprintf(stderr, "driver_alloc_loop: read back 0x%02x, wrote 0x5a\n", last);
    return 1;
  }
  if (!check(cuMemFree(block), "cuMemFree")) return 1;

  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    if (!check(cuMemAlloc(&block, bytes), "cuMemAlloc")) return 1;
    if (!check(cuMemFree(block), "cuMemFree")) return 1;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const double us = std::chrono::duration<double, std::micro>(elapsed).count() / pairs;
  std::printf("driver_alloc_loop pairs=%ld bytes=%zu us_per_pair=%.3f\n", pairs, bytes, us);
  cuDevicePrimaryCtxRelease(device);
  return 0;
}
