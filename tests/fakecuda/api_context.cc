// Exported entry points: primary and created contexts, the per-thread current-context stack,
// synchronization.
#include <algorithm>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace {

CUresult checkDevice(CUdevice dev) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  return dev >= 0 && dev < static_cast<int>(d.devices.size()) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_DEVICE;
}

CUresult createContext(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  auto* c = new Context;
  c->device = dev;
  c->flags = flags;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.contexts.insert(c);
    activateContext(d, c);
  }
  contextStack().push_back(c);  // a new context becomes current
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

CUresult destroyContext(CUcontext ctx) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    c = findContext(d, ctx);
    if (c == nullptr || c->primary || !c->alive) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  auto& stack = contextStack();
  if (!stack.empty() && stack.back() == c) stack.pop_back();
  teardownContext(c);
  return CUDA_SUCCESS;
}

CUresult primaryRelease(CUdevice dev) {
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    c = d.devices[dev].primary;
    if (c->retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->retains > 0) return CUDA_SUCCESS;
  }
  teardownContext(c);
  return CUDA_SUCCESS;
}

// As the real driver documents: resetting the primary context does not release it; the retains
// stand and the next retain makes it active again.
CUresult primaryReset(CUdevice dev) {
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    c = d.devices[dev].primary;
  }
  teardownContext(c);
  return CUDA_SUCCESS;
}

CUresult popContext(CUcontext* pctx) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(stack.back());
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult pushContext(CUcontext ctx) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = findContext(d, ctx);
  if (c == nullptr || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
  contextStack().push_back(c);
  return CUDA_SUCCESS;
}

CUresult synchronizeContext(Context* c) {
  if (CUresult r = prohibitUnsafeCall(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::vector<Position> tails;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (!c->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    tails = contextTails(d, c);
  }
  waitAll(tails);
  releasePoolsAboveThreshold(c->device);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  countCall(Entry::cuDevicePrimaryCtxRetain);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = d.devices[dev].primary;
  if (!c->alive) activateContext(d, c);
  c->retains += 1;
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  countCall(Entry::cuDevicePrimaryCtxRelease);
  return primaryRelease(dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  countCall(Entry::cuDevicePrimaryCtxRelease_v2);
  return primaryRelease(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  countCall(Entry::cuDevicePrimaryCtxReset);
  return primaryReset(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  countCall(Entry::cuDevicePrimaryCtxReset_v2);
  return primaryReset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  countCall(Entry::cuDevicePrimaryCtxGetState);
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  *flags = d.devices[dev].primary->flags;
  *active = d.devices[dev].primary->alive ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  countCall(Entry::cuCtxCreate);
  return createContext(pctx, flags, dev);
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  countCall(Entry::cuCtxCreate_v2);
  return createContext(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  countCall(Entry::cuCtxCreate_v3);
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return createContext(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  countCall(Entry::cuCtxCreate_v4);
  (void)ctxCreateParams;  // execution affinity and CIG parameters do not change the simulation
  return createContext(pctx, flags, dev);
}

CUresult cuCtxDestroy(CUcontext ctx) {
  countCall(Entry::cuCtxDestroy);
  return destroyContext(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  countCall(Entry::cuCtxDestroy_v2);
  return destroyContext(ctx);
}

// The usage count of CUDA 1.x: a created context starts at one, cuCtxAttach adds one to the
// current context's, cuCtxDetach of the current context takes one away and destroys the context at
// zero.
CUresult cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  countCall(Entry::cuCtxAttach);
  if (pctx == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = stack.back();
  if (c->primary || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
  c->attaches += 1;
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

CUresult cuCtxDetach(CUcontext ctx) {
  countCall(Entry::cuCtxDetach);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  Driver& d = driver();
  {
    std::lock_guard<std::mutex> lock(d.mu);
    Context* c = findContext(d, ctx);
    if (c == nullptr || c->primary || !c->alive || stack.empty() || stack.back() != c) {
      d.errors.fetch_add(1);
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (c->attaches > 0) {
      c->attaches -= 1;
      return CUDA_SUCCESS;
    }
  }
  return destroyContext(ctx);
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  countCall(Entry::cuCtxGetCurrent);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  *pctx = stack.empty() ? nullptr : reinterpret_cast<CUcontext>(stack.back());
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  countCall(Entry::cuCtxSetCurrent);
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  auto& stack = contextStack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = findContext(d, ctx);
  if (c == nullptr || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty()) {
    stack.push_back(c);
  } else {
    stack.back() = c;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  countCall(Entry::cuCtxPushCurrent);
  return pushContext(ctx);
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  countCall(Entry::cuCtxPushCurrent_v2);
  return pushContext(ctx);
}

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  countCall(Entry::cuCtxPopCurrent);
  return popContext(pctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  countCall(Entry::cuCtxPopCurrent_v2);
  return popContext(pctx);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  countCall(Entry::cuCtxGetDevice);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  *device = c->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  countCall(Entry::cuCtxGetDevice_v2);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) {
    Context* c = nullptr;
    if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
    *device = c->device;
    return CUDA_SUCCESS;
  }
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = findContext(d, ctx);
  if (c == nullptr || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
  *device = c->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  countCall(Entry::cuCtxSynchronize);
  Context* c = nullptr;
  if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
  return synchronizeContext(c);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  countCall(Entry::cuCtxSynchronize_v2);
  Context* c = nullptr;
  if (ctx == nullptr) {
    if (CUresult r = currentContext(&c); r != CUDA_SUCCESS) return r;
    return synchronizeContext(c);
  }
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  {
    Driver& d = driver();
    std::lock_guard<std::mutex> lock(d.mu);
    c = findContext(d, ctx);
    if (c == nullptr || !c->alive) return CUDA_ERROR_INVALID_CONTEXT;
  }
  return synchronizeContext(c);
}

}  // extern "C"
