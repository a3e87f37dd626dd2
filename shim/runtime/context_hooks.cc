// Context lifecycle: a context's pool hands its cached segments back before the driver destroys the
// context (cuCtxDestroy, the last cuCtxDetach, cuDevicePrimaryCtxReset, the last release of a
// primary context: by cuDevicePrimaryCtxRelease or by destroying a green context), and the
// captures on its streams stop counting once the driver has destroyed it; the pools hear of every
// context created or retained, whose streams reach the memory of every other context of its
// device.
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

// A teardown call: `before` (a Runtime member taking `argument`) drops the pool of the context the
// call will destroy and names it (nullptr: none); once the driver has destroyed it, the captures
// on its streams end with it.
template <typename Argument, typename Call>
CUresult teardown(const char* name, CUcontext (Runtime::*before)(Argument), Argument argument,
                  Call&& call) {
  Runtime* runtime = Runtime::get();
  CUcontext gone = nullptr;
  contain_failure(name, [&] {
    if (runtime != nullptr) gone = (runtime->*before)(argument);
  });
  const CUresult result = call();
  if (result == CUDA_SUCCESS && gone != nullptr) {
    contain_failure(name, [&] { runtime->after_context_gone(gone); });
  }
  return result;
}

template <typename Call>
CUresult release(CUdevice dev, Call&& call) {
  return teardown("cuDevicePrimaryCtxRelease", &Runtime::before_primary_release, dev, call);
}

template <typename Call>
CUresult reset(CUdevice dev, Call&& call) {
  return teardown("cuDevicePrimaryCtxReset", &Runtime::before_primary_reset, dev, call);
}

// A created context's pool goes before the driver destroys it (a later context may get its handle
// and addresses at once). A primary context's handle is the driver's to refuse (it is released,
// not destroyed): a pool dropped for a refused call would forget live blocks, whose frees would
// then reach the driver inside their segments; it goes only once the driver has destroyed it.
template <typename Call>
CUresult destroy(CUcontext ctx, Call&& call) {
  Runtime* runtime = Runtime::get();
  bool primary = false;
  contain_failure("cuCtxDestroy", [&] {
    if (runtime == nullptr) return;
    primary = runtime->is_primary_context(ctx);
    if (!primary) runtime->before_context_destroy(ctx);
  });
  const CUresult result = call();
  if (result == CUDA_SUCCESS && runtime != nullptr) {
    contain_failure("cuCtxDestroy", [&] {
      if (primary) runtime->before_context_destroy(ctx);
      runtime->after_context_gone(ctx);
    });
  }
  return result;
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
  return release(dev, [&] { return real::cuDevicePrimaryCtxRelease(dev); });
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return release(dev, [&] { return real::cuDevicePrimaryCtxRelease_v2(dev); });
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return reset(dev, [&] { return real::cuDevicePrimaryCtxReset(dev); });
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return reset(dev, [&] { return real::cuDevicePrimaryCtxReset_v2(dev); });
}

CUresult cuCtxDestroy(CUcontext ctx) {
  return destroy(ctx, [&] { return real::cuCtxDestroy(ctx); });
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return destroy(ctx, [&] { return real::cuCtxDestroy_v2(ctx); });
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
  return teardown("cuCtxDetach", &Runtime::before_context_detach, ctx,
                  [&] { return real::cuCtxDetach(ctx); });
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
  return teardown("cuGreenCtxDestroy", &Runtime::before_green_context_destroy, hCtx,
                  [&] { return real::cuGreenCtxDestroy(hCtx); });
}

}  // namespace vramshim::hooks
