// Exported entry points: copies and sets, synchronous (run in the default stream's order, then
// waited for) and asynchronous (queued on a stream). Device ranges are checked when the call is
// made.
#include <cstring>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace {

enum class Side { Host, Device };

struct Range {
  uintptr_t addr;
  Side side;
};

CUresult checkDeviceRanges(std::initializer_list<Range> ranges, size_t bytes) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  for (const Range& r : ranges) {
    if (r.side == Side::Device && !isAccessible(d, r.addr, bytes)) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult copy(Range dst, Range src, size_t bytes, CUstream hStream, bool per_thread,
              bool synchronous) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst.addr == 0 || src.addr == 0) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = checkDeviceRanges({dst, src}, bytes); r != CUDA_SUCCESS) return r;
  auto op = [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(dst.addr), reinterpret_cast<const void*>(src.addr), bytes);
  };
  return synchronous ? submitAndWait(s, op) : submit(s, {}, op);
}

CUresult set8(CUdeviceptr dst, unsigned char value, size_t count, CUstream hStream, bool per_thread,
              bool synchronous) {
  if (count == 0) return CUDA_SUCCESS;
  std::shared_ptr<Stream> s;
  if (CUresult r = resolveStream(hStream, per_thread, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = checkDeviceRanges({{dst, Side::Device}}, count); r != CUDA_SUCCESS) return r;
  auto op = [dst, value, count] { std::memset(reinterpret_cast<void*>(dst), value, count); };
  return synchronous ? submitAndWait(s, op) : submit(s, {}, op);
}

Range device(CUdeviceptr p) { return Range{p, Side::Device}; }
Range host(const void* p) { return Range{reinterpret_cast<uintptr_t>(p), Side::Host}; }

}  // namespace

extern "C" {

CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount) {
  countCall(Entry::cuMemcpyHtoD);
  return copy(device(dstDevice), host(srcHost), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  countCall(Entry::cuMemcpyHtoD_v2);
  return copy(device(dstDevice), host(srcHost), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  countCall(Entry::cuMemcpyHtoD_v2_ptds);
  return copy(device(dstDevice), host(srcHost), ByteCount, nullptr, true, true);
}

CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  countCall(Entry::cuMemcpyDtoH);
  return copy(host(dstHost), device(srcDevice), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  countCall(Entry::cuMemcpyDtoH_v2);
  return copy(host(dstHost), device(srcDevice), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  countCall(Entry::cuMemcpyDtoH_v2_ptds);
  return copy(host(dstHost), device(srcDevice), ByteCount, nullptr, true, true);
}

CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  countCall(Entry::cuMemcpyDtoD);
  return copy(device(dstDevice), device(srcDevice), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  countCall(Entry::cuMemcpyDtoD_v2);
  return copy(device(dstDevice), device(srcDevice), ByteCount, nullptr, false, true);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  countCall(Entry::cuMemcpyDtoD_v2_ptds);
  return copy(device(dstDevice), device(srcDevice), ByteCount, nullptr, true, true);
}

CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N) {
  countCall(Entry::cuMemsetD8);
  return set8(dstDevice, uc, N, nullptr, false, true);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  countCall(Entry::cuMemsetD8_v2);
  return set8(dstDevice, uc, N, nullptr, false, true);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  countCall(Entry::cuMemsetD8_v2_ptds);
  return set8(dstDevice, uc, N, nullptr, true, true);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount,
                           CUstream hStream) {
  countCall(Entry::cuMemcpyHtoDAsync);
  return copy(device(dstDevice), host(srcHost), ByteCount, hStream, false, false);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  countCall(Entry::cuMemcpyHtoDAsync_v2);
  return copy(device(dstDevice), host(srcHost), ByteCount, hStream, false, false);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  countCall(Entry::cuMemcpyHtoDAsync_v2_ptsz);
  return copy(device(dstDevice), host(srcHost), ByteCount, hStream, true, false);
}

CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                           CUstream hStream) {
  countCall(Entry::cuMemcpyDtoHAsync);
  return copy(host(dstHost), device(srcDevice), ByteCount, hStream, false, false);
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  countCall(Entry::cuMemcpyDtoHAsync_v2);
  return copy(host(dstHost), device(srcDevice), ByteCount, hStream, false, false);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  countCall(Entry::cuMemcpyDtoHAsync_v2_ptsz);
  return copy(host(dstHost), device(srcDevice), ByteCount, hStream, true, false);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                           unsigned int ByteCount, CUstream hStream) {
  countCall(Entry::cuMemcpyDtoDAsync);
  return copy(device(dstDevice), device(srcDevice), ByteCount, hStream, false, false);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  countCall(Entry::cuMemcpyDtoDAsync_v2);
  return copy(device(dstDevice), device(srcDevice), ByteCount, hStream, false, false);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  countCall(Entry::cuMemcpyDtoDAsync_v2_ptsz);
  return copy(device(dstDevice), device(srcDevice), ByteCount, hStream, true, false);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  countCall(Entry::cuMemsetD8Async);
  return set8(dstDevice, uc, N, hStream, false, false);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  countCall(Entry::cuMemsetD8Async_ptsz);
  return set8(dstDevice, uc, N, hStream, true, false);
}

}  // extern "C"
