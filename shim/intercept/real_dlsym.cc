#include "shim/intercept/real_dlsym.h"

#include <dlfcn.h>

namespace vramshim::intercept {

DlsymFn real_dlsym() {
  // A function-local static is thread-safe and needs no allocation once resolved.
  static const DlsymFn resolved = [] {
    void* fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (fn == nullptr) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(fn);
  }();
  return resolved;
}

}  // namespace vramshim::intercept
