// Allocation sites with known figures, for the exit report: leak_three_blocks() never frees three
// 1 MiB blocks, churn() allocates and frees 10,000 times, peak_then_free() holds 256 MiB at the
// process's peak and frees it before exit. argv[1] picks the door the allocations go through:
// linked (exported symbols), dlsym (on the driver's handle) or proc_address (cuGetProcAddress).
#include <cuda.h>

#include <cstring>
#include <string>

#include "tests/integration/programs/driver_by_dlsym.h"

namespace {

using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);

Alloc g_alloc = nullptr;
Free g_free = nullptr;

void choose_door(const std::string& door) {
  if (door == "linked") {
    g_alloc = &cuMemAlloc_v2;
    g_free = &cuMemFree_v2;
    return;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CHECK_TRUE(driver != nullptr);
  const DriverByDlsym d = driver_by_dlsym(driver);
  if (door == "dlsym") {
    g_alloc = d.mem_alloc;
    g_free = d.mem_free;
    return;
  }
  CHECK_TRUE(door == "proc_address");
  void* fn = nullptr;
  CHECK_CU(d.get_proc_address("cuMemAlloc", &fn, 12000, 0, nullptr));
  g_alloc = reinterpret_cast<Alloc>(fn);
  CHECK_CU(d.get_proc_address("cuMemFree", &fn, 12000, 0, nullptr));
  g_free = reinterpret_cast<Free>(fn);
}

}  // namespace

extern "C" {

__attribute__((noinline)) void leak_three_blocks() {
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(g_alloc(&ptr, 1 << 20));
  }
}

__attribute__((noinline)) void churn() {
  for (int i = 0; i < 10000; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(g_alloc(&ptr, 4096));
    CHECK_CU(g_free(ptr));
  }
}

__attribute__((noinline)) void peak_then_free() {
  CUdeviceptr ptr = 0;
  CHECK_CU(g_alloc(&ptr, size_t{256} << 20));
  CHECK_CU(g_free(ptr));
}

}  // extern "C"

int main(int argc, char** argv) {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  choose_door(argc > 1 ? argv[1] : "linked");
  leak_three_blocks();
  churn();
  peak_then_free();
  return 0;
}
