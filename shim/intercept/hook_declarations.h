// Generated from hooked_functions.def: the exported hooks' C declarations, the hand-written hook
// bodies (vramshim::hooks::NAME) and typed calls to the real driver functions
// (vramshim::real::NAME).
#pragma once

#include "shim/intercept/cuda_api.h"
#include "shim/intercept/hook_table.h"

extern "C" {
#define VRAMSHIM_CUSTOM_HOOK(name, params, args) CUresult name params;
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
}

namespace vramshim::hooks {
#define VRAMSHIM_CUSTOM_HOOK(name, params, args) CUresult name params;
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
}  // namespace vramshim::hooks

namespace vramshim::real {
// No driver behind a hook can only happen when a program calls a hook without having loaded the
// driver.
#define VRAMSHIM_CUSTOM_HOOK(name, params, args)                        \
  inline CUresult name params {                                         \
    void* real_fn_ = intercept::real_function(intercept::HookId::name); \
    if (real_fn_ == nullptr) return CUDA_ERROR_NOT_INITIALIZED;         \
    return reinterpret_cast<decltype(&::name)>(real_fn_) args;          \
  }
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
}  // namespace vramshim::real
