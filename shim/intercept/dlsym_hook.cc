// The second door: dlsym(handle, "cu…") returns the shim's hook for that exact name when the driver
// defines it. Everything else goes to glibc untouched (see dlsym_trampoline.S).
#include <dlfcn.h>

#include "shim/intercept/driver_symbol.h"
#include "shim/intercept/hook_table.h"
#include "shim/intercept/own_definition.h"
#include "shim/intercept/passthrough.h"
#include "shim/intercept/real_dlsym.h"
#include "shim/intercept/unhooked_stream_source.h"

using namespace vramshim::intercept;

namespace {

// dlsym(RTLD_NEXT, name) from `caller`. It means "the definition after mine": a wrapper library
// around the driver (one that defines `name` itself) must get the driver's function, or the hook
// that leads back to the wrapper would recurse. Code that only looks the driver up this way (a
// helper linked after the shim) would get the driver's function too, and with it calls, and
// streams, the shim never sees: it gets the hook instead. Returns the answer, or sets *forward_to
// to glibc's dlsym.
void* answer_next(const char* name, const void* caller, DlsymFn glibc_dlsym, void** forward_to) {
  *forward_to = reinterpret_cast<void*>(glibc_dlsym);
  // Names first: a sanitizer's runtime looks up libc's functions this way before the C library
  // can read the environment shim_disabled() asks.
  const HookId id = find_hook_by_name(name);
  if (id == HookId::kNone && !creates_streams(name)) return nullptr;
  if (shim_disabled() || glibc_dlsym == nullptr) return nullptr;
  if (defines_itself(caller, name, glibc_dlsym)) return nullptr;
  if (id != HookId::kNone) {
    if (resolve_real_function(id) == nullptr) return nullptr;  // no driver behind the hook
    *forward_to = nullptr;
    return hook_address(id);
  }
  void* driver_function = nullptr;
  if (find_driver_symbol(name, &driver_function) == DriverLookup::kFound) {
    note_unhooked_stream_source(name);  // glibc hands the caller a creator the shim cannot see
  }
  return nullptr;
}

}  // namespace

// Returns the hook to hand back, or sets *forward_to to glibc's dlsym (and returns null) to
// forward.
extern "C" __attribute__((visibility("hidden"))) void* vramshim_dlsym_answer(void* handle,
                                                                             const char* name,
                                                                             void** forward_to,
                                                                             const void* caller) {
  DlsymFn glibc_dlsym = real_dlsym();
  if (handle == RTLD_NEXT) return answer_next(name, caller, glibc_dlsym, forward_to);
  const HookId id = find_hook_by_name(name);
  if (id == HookId::kNone && creates_streams(name) && !shim_disabled() && glibc_dlsym != nullptr) {
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
