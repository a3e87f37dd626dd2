// The exported hooks, generated from hooked_functions.def: count the call, then either pass it
// through (VRAMSHIM_DISABLE=1) or run the hand-written body.
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/passthrough.h"

#define VRAMSHIM_EXPORT __attribute__((visibility("default")))

using vramshim::intercept::count_call;
using vramshim::intercept::HookId;
using vramshim::intercept::shim_disabled;

#define VRAMSHIM_CUSTOM_HOOK(name, params, args)                                \
  extern "C" VRAMSHIM_EXPORT CUresult name params {                             \
    count_call(HookId::name);                                                   \
    if (__builtin_expect(shim_disabled(), 0)) return vramshim::real::name args; \
    return vramshim::hooks::name args;                                          \
  }
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
