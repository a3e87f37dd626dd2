// The second door: dlsym(handle, "cu…") on any handle but RTLD_NEXT returns the shim's hook for
// that exact name when the driver defines it. Everything else goes to glibc untouched (see
// dlsym_trampoline.S).
#include <dlfcn.h>

#include "shim/intercept/hook_table.h"
#include "shim/intercept/passthrough.h"
#include "shim/intercept/real_dlsym.h"
#include "shim/intercept/unhooked_stream_source.h"

using namespace vramshim::intercept;

// Returns the hook to hand back, or sets *forward_to to glibc's dlsym (and returns null) to
// forward.
extern "C" __attribute__((visibility("hidden"))) void* vramshim_dlsym_answer(void* handle,
                                                                             const char* name,
                                                                             void** forward_to) {
  DlsymFn glibc_dlsym = real_dlsym();
  // RTLD_NEXT means "the definition after mine" to its caller, e.g. a wrapper library around the
  // driver. Answering with the shim's hook would hand the wrapper a function that leads back to
  // itself.
  const HookId id = handle == RTLD_NEXT ? HookId::kNone : find_hook_by_name(name);
  if (id == HookId::kNone && handle != RTLD_NEXT && !shim_disabled() && glibc_dlsym != nullptr &&
      creates_streams(name)) {
    // A stream-creating function the shim does not hook: hand it out, and fence without it.
    void* fn = glibc_dlsym(handle, name);
    if (fn != nullptr) note_unhooked_stream_source(name);
    return fn;
  }
  if (id == HookId::kNone || shim_disabled() || glibc_dlsym == nullptr) {
    *forward_to = reinterpret_cast<void*>(glibc_dlsym);
    return nullptr;
  }
  void* fn = glibc_dlsym(handle, name);
  if (fn == nullptr) return nullptr;  // glibc has set dlerror().
  if (fn == hook_address(id)) {
    // RTLD_DEFAULT found the shim itself: answer with the hook only if a driver stands behind it.
    return resolve_real_function(id) != nullptr ? fn : nullptr;
  }
  note_real_function(id, fn);
  return hook_address(id);
}
