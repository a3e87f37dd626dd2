// Door 3: cuGetProcAddress, as the CUDA runtime uses it: base names with a version and flags, the
// per-thread-default-stream variants, and lookups of cuGetProcAddress itself (v1 at 11030, v2 at
// 12000).
#include <initializer_list>

#include "tests/integration/programs/driver_by_dlsym.h"
#include "tests/integration/programs/fake_driver_state.h"

namespace {

template <typename Fn>
Fn proc(const DriverByDlsym& d, const char* name, int version, cuuint64_t flags) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  CHECK_CU(d.get_proc_address(name, &fn, version, flags, &status));
  CHECK_TRUE(fn != nullptr && status == CU_GET_PROC_ADDRESS_SUCCESS);
  return reinterpret_cast<Fn>(fn);
}

using AllocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using FreeAsync = CUresult (*)(CUdeviceptr, CUstream);
using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);
using ProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using ProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

}  // namespace

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CHECK_TRUE(driver != nullptr);
  const DriverByDlsym d = driver_by_dlsym(driver);
  const CUdevice device = make_context_current(d);

  // Legacy-stream and per-thread variants of the same base name.
  for (cuuint64_t flags :
       {cuuint64_t{0}, cuuint64_t{CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}}) {
    auto alloc_async = proc<AllocAsync>(d, "cuMemAllocAsync", 11020, flags);
    auto free_async = proc<FreeAsync>(d, "cuMemFreeAsync", 11020, flags);
    CUdeviceptr ptr = 0;
    CHECK_CU(alloc_async(&ptr, 1 << 16, nullptr));
    CHECK_CU(free_async(ptr, nullptr));
  }

  // "cuMemAlloc" at 3020 is cuMemAlloc_v2.
  auto alloc = proc<Alloc>(d, "cuMemAlloc", 3020, 0);
  CUdeviceptr ptr = 0;
  CHECK_CU(alloc(&ptr, 8192));

  // cuGetProcAddress asked for itself, then used: v1 (4 arguments) frees, v2 (5 arguments)
  // allocates.
  auto proc_v1 = proc<ProcV1>(d, "cuGetProcAddress", 11030, 0);
  void* fn = nullptr;
  CHECK_CU(proc_v1("cuMemFree", &fn, 3020, 0));
  CHECK_CU(reinterpret_cast<Free>(fn)(ptr));
  auto proc_v2 = proc<ProcV2>(d, "cuGetProcAddress", 12000, 0);
  CHECK_CU(proc_v2("cuMemAlloc", &fn, 3020, 0, nullptr));
  CHECK_CU(reinterpret_cast<Alloc>(fn)(&ptr, 8192));
  CHECK_CU(d.mem_free(ptr));

  print_fake_calls({"cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemFreeAsync",
                    "cuMemFreeAsync_ptsz", "cuMemAlloc_v2", "cuMemFree_v2", "cuGetProcAddress",
                    "cuGetProcAddress_v2"});
  CHECK_CU(d.primary_release(device));
  return 0;
}
