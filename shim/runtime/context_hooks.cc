// Context lifecycle: a context's pool hands its cached segments back before the driver destroys the
// context (cuCtxDestroy, the last cuCtxDetach, cuDevicePrimaryCtxReset, the last release of a
// primary context: by cuDevicePrimaryCtxRelease or by destroying a green context); the pools hear
// of every context created or retained, whose streams reach the memory of every other context of
// its device.
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/internal_failure.h"
#include "shim/runtime/runtime.h"

namespace vramshim::hooks {
namespace {

using intercept::contain_failure;
using runtime::Runtime;

CUresult retain(CUcontext* pctx, CUdevice dev) {
  const CUresult result = real::cuDevicePrimaryCtxRetain(pctx, dev);
  if (result == CUDA_SUCCESS && pctx != nullptr) {
    contain_failure("cuDevicePrimaryCtxRetain", [&] {
      if (Runtime* runtime = Runtime::get()) runtime->on_primary_retained(dev, *pctx);
    });
  }
  return result;
}

template <typename Call>
CUresult create(CUcontext* pctx, CUdevice dev, Call&& call) {
  const CUresult result = call();
  if (result == CUDA_SUCCESS && pctx != nullptr) {
    contain_failure("cuCtxCreate", [&] {
      if (Runtime* runtime = Runtime::get()) runtime->on_context_created(dev, *pctx);
    });
  }
  return result;
}

template <typename Call>
CUresult before_release(CUdevice dev, Call&& call) {
  contain_failure("cuDevicePrimaryCtxRelease", [&] {
    if (Runtime* runtime = Runtime::get()) runtime->before_primary_release(dev);
  });
  return call();
}

template <typename Call>
CUresult before_reset(CUdevice dev, Call&& call) {
  contain_failure("cuDevicePrimaryCtxReset", [&] {
    if (Runtime* runtime = Runtime::get()) runtime->before_primary_reset(dev);
  });
  return call();
}

template <typename Call>
CUresult before_destroy(CUcontext ctx, Call&& call) {
  contain_failure("cuCtxDestroy", [&] {
    if (Runtime* runtime = Runtime::get()) runtime->before_context_destroy(ctx);
  });
  return call();
}

}  // namespace

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create(pctx, dev, [&] { return real::cuCtxCreate(pctx, flags, dev); });
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create(pctx, dev, [&] { return real::cuCtxCreate_v2(pctx, flags, dev); });
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  return create(pctx, dev,
                [&] { return real::cuCtxCreate_v3(pctx, paramsArray, numParams, flags, dev); });
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  return create(pctx, dev, [&] { return real::cuCtxCreate_v4(pctx, ctxCreateParams, flags, dev); });
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) { return retain(pctx, dev); }

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return before_release(dev, [&] { return real::cuDevicePrimaryCtxRelease(dev); });
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return before_release(dev, [&] { return real::cuDevicePrimaryCtxRelease_v2(dev); });
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return before_reset(dev, [&] { return real::cuDevicePrimaryCtxReset(dev); });
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return before_reset(dev, [&] { return real::cuDevicePrimaryCtxReset_v2(dev); });
}

CUresult cuCtxDestroy(CUcontext ctx) {
  return before_destroy(ctx, [&] { return real::cuCtxDestroy(ctx); });
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return before_destroy(ctx, [&] { return real::cuCtxDestroy_v2(ctx); });
}

CUresult cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  const CUresult result = real::cuCtxAttach(pctx, flags);
  if (result == CUDA_SUCCESS && pctx != nullptr) {
    contain_failure("cuCtxAttach", [&] {
      if (Runtime* runtime = Runtime::get()) runtime->on_context_attached(*pctx);
    });
  }
  return result;
}

CUresult cuCtxDetach(CUcontext ctx) {
  contain_failure("cuCtxDetach", [&] {
    if (Runtime* runtime = Runtime::get()) runtime->before_context_detach(ctx);
  });
  return real::cuCtxDetach(ctx);
}

CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                          unsigned int flags) {
  const CUresult result = real::cuGreenCtxCreate(phCtx, desc, dev, flags);
  if (result == CUDA_SUCCESS && phCtx != nullptr) {
    contain_failure("cuGreenCtxCreate", [&] {
      if (Runtime* runtime = Runtime::get()) runtime->on_green_context_created(*phCtx, dev);
    });
  }
  return result;
}

CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  contain_failure("cuGreenCtxDestroy", [&] {
    if (Runtime* runtime = Runtime::get()) runtime->before_green_context_destroy(hCtx);
  });
  return real::cuGreenCtxDestroy(hCtx);
}

}  // namespace vramshim::hooks
