#include "shim/intercept/hook_declarations.h"

namespace vramshim::hooks {

CUresult cuMemAlloc_v2(CUdeviceptr * dptr, size_t bytesize) { return real::cuMemAlloc_v2(dptr, bytesize); }

CUresult cuMemAllocPitch_v2(CUdeviceptr * dptr, size_t* pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes) { return real::cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); }

CUresult cuMemFree_v2(CUdeviceptr dptr) { return real::cuMemFree_v2(dptr); }

CUresult cuMemAlloc(CUdeviceptr_v1 * dptr, unsigned int bytesize) { return real::cuMemAlloc(dptr, bytesize); }

CUresult cuMemAllocPitch(CUdeviceptr_v1 * dptr, unsigned int* pPitch, unsigned int WidthInBytes, unsigned int Height, unsigned int ElementSizeBytes) { return real::cuMemAllocPitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); }

CUresult cuMemFree(CUdeviceptr_v1 dptr) { return real::cuMemFree(dptr); }

CUresult cuMemAllocAsync(CUdeviceptr * dptr, size_t bytesize, CUstream hStream) { return real::cuMemAllocAsync(dptr, bytesize, hStream); }

CUresult cuMemAllocAsync_ptsz(CUdeviceptr * dptr, size_t bytesize, CUstream hStream) { return real::cuMemAllocAsync_ptsz(dptr, bytesize, hStream); }

CUresult cuMemAllocFromPoolAsync(CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) { return real::cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream); }

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) { return real::cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream); }

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return real::cuMemFreeAsync(dptr, hStream); }

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return real::cuMemFreeAsync_ptsz(dptr, hStream); }

CUresult cuMemAllocManaged(CUdeviceptr * dptr, size_t bytesize, unsigned int flags) { return real::cuMemAllocManaged(dptr, bytesize, flags); }

CUresult cuMemAllocHost(void** pp, unsigned int bytesize) { return real::cuMemAllocHost(pp, bytesize); }

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return real::cuMemAllocHost_v2(pp, bytesize); }

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) { return real::cuMemHostAlloc(pp, bytesize, Flags); }

CUresult cuMemFreeHost(void* p) { return real::cuMemFreeHost(p); }

CUresult cuMemCreate(CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop, unsigned long long flags) { return real::cuMemCreate(handle, size, prop, flags); }

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return real::cuMemRelease(handle); }

}  // namespace vramshim::hooks
