#include "shim/intercept/hook_declarations.h"

namespace vramshim::hooks {

CUresult cuDevicePrimaryCtxRetain(CUcontext * pctx, CUdevice dev) { return real::cuDevicePrimaryCtxRetain(pctx, dev); }

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return real::cuDevicePrimaryCtxRelease(dev); }

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return real::cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return real::cuDevicePrimaryCtxReset(dev); }

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return real::cuDevicePrimaryCtxReset_v2(dev); }

CUresult cuCtxDestroy(CUcontext ctx) { return real::cuCtxDestroy(ctx); }

CUresult cuCtxDestroy_v2(CUcontext ctx) { return real::cuCtxDestroy_v2(ctx); }

}  // namespace vramshim::hooks
