// Exported entry points: green contexts, as far as a program needs them to make a green context's
// stream. A green context retains its device's primary context and its streams live there: they
// share the primary context's memory, are non-blocking (the only kind the driver allows), and a
// synchronize of the primary context waits for them, as the real driver documents.
#include <mutex>
#include <unordered_set>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace {

constexpr unsigned kSmCount = 132;  // an H200's

struct GreenContext {
  CUdevice device;
};

struct ResourceDescription {
  unsigned sm_count;
};

std::mutex g_mutex;
std::unordered_set<GreenContext*> g_green_contexts;

GreenContext* findGreen(CUgreenCtx handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto* green = reinterpret_cast<GreenContext*>(handle);
  return g_green_contexts.count(green) ? green : nullptr;
}

CUresult checkDevice(CUdevice dev) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  return dev >= 0 && dev < static_cast<int>(d.devices.size()) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

extern "C" {

CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource* result, CUdevResourceType type) {
  countCall(Entry::cuDeviceGetDevResource);
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  if (result == nullptr || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  *result = CUdevResource{};
  result->type = CU_DEV_RESOURCE_TYPE_SM;
  result->sm.smCount = kSmCount;
  return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources,
                                   unsigned int nbResources) {
  countCall(Entry::cuDevResourceGenerateDesc);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  if (phDesc == nullptr || resources == nullptr || nbResources == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Descriptions live as long as the process, as nothing in the API destroys them.
  *phDesc = reinterpret_cast<CUdevResourceDesc>(new ResourceDescription{resources[0].sm.smCount});
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                          unsigned int flags) {
  countCall(Entry::cuGreenCtxCreate);
  if (phCtx == nullptr || desc == nullptr || flags != CU_GREEN_CTX_DEFAULT_STREAM) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUcontext primary = nullptr;
  if (CUresult r = cuDevicePrimaryCtxRetain(&primary, dev); r != CUDA_SUCCESS) return r;
  auto* green = new GreenContext{dev};
  std::lock_guard<std::mutex> lock(g_mutex);
  g_green_contexts.insert(green);
  *phCtx = reinterpret_cast<CUgreenCtx>(green);
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  countCall(Entry::cuGreenCtxDestroy);
  GreenContext* green = findGreen(hCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_green_contexts.erase(green);
  }
  const CUdevice device = green->device;
  delete green;
  return cuDevicePrimaryCtxRelease_v2(device);
}

// A priority is accepted and ignored, as by cuStreamCreateWithPriority.
CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags,
                                int /*priority*/) {
  countCall(Entry::cuGreenCtxStreamCreate);
  GreenContext* green = findGreen(greenCtx);
  if (green == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((flags & CU_STREAM_NON_BLOCKING) == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* primary = nullptr;
  {
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mu);
    primary = d.devices[green->device].primary;
  }
  return createStream(primary, phStream, flags);
}

}  // extern "C"
