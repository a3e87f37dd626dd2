// The exported hooks, generated from hooked_functions.def: count the call, then either pass it
// through (VRAMSHIM_DISABLE=1), or run the hand-written body, or, for per-thread-stream entry
// points, note the per-thread stream and forward.
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/passthrough.h"
#include "shim/intercept/per_thread_stream.h"

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
#define VRAMSHIM_PER_THREAD_HOOK(name, params, args)    \
  extern "C" VRAMSHIM_EXPORT CUresult name params {     \
    count_call(HookId::name);                           \
    vramshim::intercept::note_per_thread_stream_used(); \
    return vramshim::real::name args;                   \
  }
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
#undef VRAMSHIM_PER_THREAD_HOOK
