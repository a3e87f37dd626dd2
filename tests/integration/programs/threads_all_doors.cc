// 8 threads allocate and free at once, each through every door in turn: the exported symbol, dlsym
// on the driver's handle, dlsym(RTLD_DEFAULT) and cuGetProcAddress with and without the per-thread
// flag.
#include <cuda.h>

#include <thread>
#include <vector>

#include "tests/integration/programs/driver_by_dlsym.h"
#include "tests/integration/programs/fake_driver_state.h"

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 250;

using AllocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using FreeAsync = CUresult (*)(CUdeviceptr, CUstream);

struct Doors {
  DriverByDlsym by_handle;
  DriverByDlsym by_default;
  AllocAsync alloc_async[2];
  FreeAsync free_async[2];
};

void worker(const Doors& doors, CUcontext context, int index) {
  CHECK_CU(cuCtxSetCurrent(context));
  for (int round = 0; round < kRounds; ++round) {
    const size_t size = 512 * static_cast<size_t>(1 + (index + round) % 16);
    CUdeviceptr ptr = 0;
    switch (round % 4) {
      case 0:
        CHECK_CU(cuMemAlloc(&ptr, size));
        CHECK_CU(cuMemFree(ptr));
        break;
      case 1:
        CHECK_CU(doors.by_handle.mem_alloc(&ptr, size));
        CHECK_CU(doors.by_handle.mem_free(ptr));
        break;
      case 2:
        CHECK_CU(doors.by_default.mem_alloc(&ptr, size));
        CHECK_CU(doors.by_default.mem_free(ptr));
        break;
      case 3: {
        const int variant = index % 2;
        CHECK_CU(doors.alloc_async[variant](&ptr, size, nullptr));
        CHECK_CU(doors.free_async[variant](ptr, nullptr));
        break;
      }
    }
  }
}

}  // namespace

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  CHECK_TRUE(driver != nullptr);
  Doors doors{driver_by_dlsym(driver), driver_by_dlsym(RTLD_DEFAULT), {}, {}};
  const CUdevice device = make_context_current(doors.by_handle);
  for (int variant = 0; variant < 2; ++variant) {
    const cuuint64_t flags = variant == 0 ? 0 : CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void* fn = nullptr;
    CHECK_CU(doors.by_handle.get_proc_address("cuMemAllocAsync", &fn, 11020, flags, nullptr));
    doors.alloc_async[variant] = reinterpret_cast<AllocAsync>(fn);
    CHECK_CU(doors.by_handle.get_proc_address("cuMemFreeAsync", &fn, 11020, flags, nullptr));
    doors.free_async[variant] = reinterpret_cast<FreeAsync>(fn);
  }
  CUcontext context;
  CHECK_CU(cuCtxGetCurrent(&context));

  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, std::cref(doors), context, i);
  for (std::thread& t : threads) t.join();

  print_fake_calls({"cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
                    "cuMemFreeAsync", "cuMemFreeAsync_ptsz"});
  CHECK_CU(doors.by_handle.primary_release(device));
  return 0;
}
