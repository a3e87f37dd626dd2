// The exported hooks, generated from hooked_functions.def: count the call, then either pass it
// through (VRAMSHIM_DISABLE=1) or run the hand-written body, whose exceptions never reach the
// program (internal_failure.h) and during which the thread's cancellation is held back
// (deferred_cancellation.h).
#include <exception>

#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/internal_failure.h"
#include "shim/intercept/passthrough.h"
#include "shim/support/deferred_cancellation.h"

#define VRAMSHIM_EXPORT __attribute__((visibility("default")))

using vramshim::intercept::count_call;
using vramshim::intercept::failed_hook;
using vramshim::intercept::HookId;
using vramshim::intercept::shim_disabled;

namespace {

// Cancellation is held back wherever the shim can meet a cancellation point (a catch-all below
// would end the cancellation's unwinding, and glibc aborts then): from start to end of every hook
// but the pool's own (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2), whose hit path would pay 19
// ns for it; these hold it back around each driver call and wait they make (DriverDeviceApi, the
// runtime's pass-through calls, the fence claim's wait, the device lock's nap, a stack's capture,
// log lines, the runtime's start, an out-of-memory's facts). The driver calls that read the calling
// thread's context (cuCtxGetCurrent, cuCtxGetDevice) are taken to contain no cancellation point.
constexpr bool holds_cancellation_throughout(HookId hook) {
  return hook != HookId::cuMemAlloc_v2 && hook != HookId::cuMemAllocPitch_v2 &&
         hook != HookId::cuMemFree_v2;
}

template <typename Body>
CUresult run_body(const char* name, Body&& body) {
  try {
    return body();
  } catch (const std::exception& error) {
    return failed_hook(name, error.what());
  } catch (...) {
    return failed_hook(name, "an exception");
  }
}

}  // namespace

#define VRAMSHIM_CUSTOM_HOOK(name, params, args)                                \
  extern "C" VRAMSHIM_EXPORT CUresult name params {                             \
    count_call(HookId::name);                                                   \
    if (__builtin_expect(shim_disabled(), 0)) return vramshim::real::name args; \
    auto body = [&] { return vramshim::hooks::name args; };                     \
    if constexpr (holds_cancellation_throughout(HookId::name)) {                \
      const vramshim::support::DeferredCancellation deferred;                   \
      return run_body(#name, body);                                             \
    } else {                                                                    \
      return run_body(#name, body);                                             \
    }                                                                           \
  }
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
