#include "shim/intercept/real_dlsym.h"

#include <dlfcn.h>

#include <atomic>

namespace vramshim::intercept {

void* glibc_function(const char* name) {
  void* found = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  return found != nullptr ? found : dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}

DlsymFn real_dlsym() {
  // No function-local static: its guard, held by a thread of the parent while it resolves, would
  // make a child forked meanwhile wait for ever. Threads that race here resolve the same pointer.
  static std::atomic<DlsymFn> resolved{nullptr};
  DlsymFn fn = resolved.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  fn = reinterpret_cast<DlsymFn>(glibc_function("dlsym"));
  resolved.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace vramshim::intercept
