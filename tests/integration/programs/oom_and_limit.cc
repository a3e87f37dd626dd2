// Out of memory and the limit. "oom": the simulated device holds 1 GiB (FAKECUDA_CAPACITY); 700 MiB
// is cached in the pool as 1 MiB blocks; a 600 MiB request must still succeed (the pool empties its
// cache and retries). The same request made otherwise must succeed too, the pool emptying its cache
// for memory it does not serve: "oom_async" (cuMemAllocAsync), "oom_vmm" (cuMemCreate),
// "oom_legacy" (the 32-bit cuMemAlloc), "oom_context" (cuMemAlloc in a second context of the
// device, whose own pool is empty). "limit": under VRAMSHIM_LIMIT=256MiB, cuMemGetInfo and
// cuDeviceTotalMem report 256 MiB and an allocation past it fails with CUDA_ERROR_OUT_OF_MEMORY.
// "kept_by_stream_ordered_pool": 700 MiB allocated and freed stream-ordered stay in the driver's
// default pool (release threshold at its most), then cuMemAlloc asks for 600 MiB;
// "vmm_kept_by_stream_ordered_pool": the same, then cuMemCreate.
// "limit_direct": under VRAMSHIM_LIMIT=256MiB, memory the driver serves itself counts against the
// cap with the pool's: 200 MiB stream-ordered, then cuMemAlloc, cuMemCreate and cuMemAllocAsync of
// 100 MiB each fail; a VMM handle released while mapped still counts until its unmap.
// "limit_after_small_frees": 255 blocks of 1 MiB freed just before (the thread caches' credit)
// leave room for 200 MiB stream-ordered. "limit_refused_free": a stream-ordered free the driver
// refuses (its stream destroyed) leaves the memory counted. "limit_unknown_device": cuMemCreate on
// a device the driver does not know.
#include <cuda.h>
#include <dlfcn.h>

#include <string>
#include <vector>

#include "tests/integration/programs/device_memory.h"
#include "tests/integration/programs/primary_context.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// 600 MiB, made as `mode` says.
CUresult allocate_600_mib(const std::string& mode) {
  CUdeviceptr ptr = 0;
  if (mode == "oom") return cuMemAlloc(&ptr, 600 * kMiB);
  if (mode == "oom_async") return cuMemAllocAsync(&ptr, 600 * kMiB, nullptr);
  if (mode == "oom_vmm") {
    const CUmemAllocationProp prop = device_memory();
    CUmemGenericAllocationHandle handle = 0;
    return cuMemCreate(&handle, 600 * kMiB, &prop, 0);
  }
  if (mode == "oom_legacy") {
    // The 32-bit cuMemAlloc (its pointer is a CUdeviceptr_v1: unsigned int), hidden by <cuda.h>.
    using LegacyAlloc = CUresult (*)(unsigned int*, unsigned int);
    const auto legacy = reinterpret_cast<LegacyAlloc>(dlsym(RTLD_DEFAULT, "cuMemAlloc"));
    unsigned int legacy_ptr = 0;
    return legacy != nullptr ? legacy(&legacy_ptr, 600 * kMiB) : CUDA_ERROR_NOT_FOUND;
  }
  if (mode == "oom_context") {
    CUcontext second = nullptr;
    CHECK_CU(cuCtxCreate(&second, nullptr, 0, 0));
    return cuMemAlloc(&ptr, 600 * kMiB);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

size_t free_bytes_now() {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

int limit_direct() {
  const CUmemAllocationProp prop = device_memory();
  CUdeviceptr async = 0, ptr = 0;
  CUmemGenericAllocationHandle handle = 0;
  CHECK_CU(cuMemAllocAsync(&async, 200 * kMiB, nullptr));
  std::printf("after_async free=%zu\n", free_bytes_now());
  std::printf("alloc_over=%d\n", static_cast<int>(cuMemAlloc(&ptr, 100 * kMiB)));
  std::printf("create_over=%d\n", static_cast<int>(cuMemCreate(&handle, 100 * kMiB, &prop, 0)));
  std::printf("async_over=%d\n", static_cast<int>(cuMemAllocAsync(&ptr, 100 * kMiB, nullptr)));
  CHECK_CU(cuMemFreeAsync(async, nullptr));
  std::printf("after_free free=%zu\n", free_bytes_now());
  // 200 MiB of VMM memory, mapped, then released: it lasts until its unmap.
  CHECK_CU(cuMemCreate(&handle, 200 * kMiB, &prop, 0));
  CUdeviceptr range = 0;
  CHECK_CU(cuMemAddressReserve(&range, 200 * kMiB, 0, 0, 0));
  CHECK_CU(cuMemMap(range, 200 * kMiB, 0, handle, 0));
  CHECK_CU(cuMemRelease(handle));
  std::printf("mapped_over=%d\n", static_cast<int>(cuMemAllocAsync(&ptr, 100 * kMiB, nullptr)));
  CHECK_CU(cuMemUnmap(range, 200 * kMiB));
  CHECK_CU(cuMemAddressFree(range, 200 * kMiB));
  std::printf("after_unmap free=%zu\n", free_bytes_now());
  const CUresult again = cuMemAllocAsync(&ptr, 200 * kMiB, nullptr);
  std::printf("again=%d\n", static_cast<int>(again));
  return again == CUDA_SUCCESS ? 0 : 1;
}

int limit_after_small_frees() {
  std::vector<CUdeviceptr> blocks(255);
  for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, kMiB));
  for (CUdeviceptr block : blocks) CHECK_CU(cuMemFree(block));
  CUdeviceptr async = 0;
  const CUresult result = cuMemAllocAsync(&async, 200 * kMiB, nullptr);
  std::printf("async_after_frees=%d\n", static_cast<int>(result));
  return result == CUDA_SUCCESS ? 0 : 1;
}

// `free_at_the_end`: whether the memory is freed once the refused free was seen (else it is still
// allocated at exit, for the report).
int limit_refused_free(bool free_at_the_end) {
  CUstream stream = nullptr;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr async = 0;
  CHECK_CU(cuMemAllocAsync(&async, 200 * kMiB, stream));
  CHECK_CU(cuStreamSynchronize(stream));
  CHECK_CU(cuStreamDestroy(stream));
  std::printf("refused_free=%d\n", static_cast<int>(cuMemFreeAsync(async, stream)));
  std::printf("after_refused free=%zu\n", free_bytes_now());
  if (!free_at_the_end) return 0;
  CHECK_CU(cuMemFreeAsync(async, nullptr));
  std::printf("after_free free=%zu\n", free_bytes_now());
  return 0;
}

int limit_unknown_device() {
  CUmemAllocationProp prop = device_memory();
  prop.location.id = 5;
  CUmemGenericAllocationHandle handle = 0;
  std::printf("unknown_device=%d\n", static_cast<int>(cuMemCreate(&handle, 2 * kMiB, &prop, 0)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "oom";
  use_primary_context();
  if (mode == "kept_by_stream_ordered_pool" || mode == "vmm_kept_by_stream_ordered_pool") {
    CUmemoryPool pool = nullptr;
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    cuuint64_t keep_all = ~cuuint64_t{0};
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
    std::vector<CUdeviceptr> blocks(700);
    for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAllocAsync(&block, kMiB, nullptr));
    for (CUdeviceptr block : blocks) CHECK_CU(cuMemFreeAsync(block, nullptr));
    CHECK_CU(cuStreamSynchronize(nullptr));
    const CUresult result =
        allocate_600_mib(mode == "vmm_kept_by_stream_ordered_pool" ? "oom_vmm" : "oom");
    std::printf("600MiB result=%d\n", static_cast<int>(result));
    return result == CUDA_SUCCESS ? 0 : 1;
  }
  if (mode.rfind("oom", 0) == 0) {
    std::vector<CUdeviceptr> blocks(700);
    for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, kMiB));
    for (CUdeviceptr block : blocks) CHECK_CU(cuMemFree(block));
    size_t free_bytes = 0, total_bytes = 0;
    CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
    std::printf("cached free=%zu total=%zu\n", free_bytes, total_bytes);
    const CUresult result = allocate_600_mib(mode);
    std::printf("600MiB result=%d\n", static_cast<int>(result));
    return result == CUDA_SUCCESS ? 0 : 1;
  }
  if (mode == "limit_direct") return limit_direct();
  if (mode == "limit_after_small_frees") return limit_after_small_frees();
  if (mode == "limit_refused_free") return limit_refused_free(true);
  if (mode == "refused_free_kept") return limit_refused_free(false);
  if (mode == "limit_unknown_device") return limit_unknown_device();
  size_t free_bytes = 0, total_bytes = 0, device_total = 0;
  CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
  CHECK_CU(cuDeviceTotalMem(&device_total, 0));
  std::printf("limit free=%zu total=%zu device_total=%zu\n", free_bytes, total_bytes, device_total);
  CUdeviceptr within = 0, beyond = 0;
  CHECK_CU(cuMemAlloc(&within, 200 * kMiB));
  CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
  const CUresult over = cuMemAlloc(&beyond, 100 * kMiB);
  std::printf("after 200MiB free=%zu over_result=%d\n", free_bytes, static_cast<int>(over));
  CHECK_CU(cuMemFree(within));
  CUdeviceptr again = 0;
  CHECK_CU(cuMemAlloc(&again, 100 * kMiB));  // room again once freed
  return over == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
