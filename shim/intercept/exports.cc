// The exported hooks, generated from hooked_functions.def: count the call, then either pass it
// through (VRAMSHIM_DISABLE=1) or run the hand-written body, whose exceptions never reach the
// program (internal_failure.h).
#include <exception>

#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/internal_failure.h"
#include "shim/intercept/passthrough.h"

#define VRAMSHIM_EXPORT __attribute__((visibility("default")))

using vramshim::intercept::count_call;
using vramshim::intercept::failed_hook;
using vramshim::intercept::HookId;
using vramshim::intercept::shim_disabled;

#define VRAMSHIM_CUSTOM_HOOK(name, params, args)                                \
  extern "C" VRAMSHIM_EXPORT CUresult name params {                             \
    count_call(HookId::name);                                                   \
    if (__builtin_expect(shim_disabled(), 0)) return vramshim::real::name args; \
    try {                                                                       \
      return vramshim::hooks::name args;                                        \
    } catch (const std::exception& error) {                                     \
      return failed_hook(#name, error.what());                                  \
    } catch (...) {                                                             \
      return failed_hook(#name, "an exception");                                \
    }                                                                           \
  }
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
