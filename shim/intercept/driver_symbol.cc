#include "shim/intercept/driver_symbol.h"

#include <dlfcn.h>

#include "shim/intercept/hook_table.h"
#include "shim/intercept/real_dlsym.h"

// Every copy of the shim exports it: two installations preloaded at once (a wheel's and a
// tarball's, a Jupyter kernel's and `vramshim run`'s) must not take each other's hooks for the
// driver, which would pool the memory twice and attribute every allocation to the other copy.
extern "C" __attribute__((visibility("default"))) const char vramshim_shim_copy = 1;

namespace vramshim::intercept {
namespace {

// Whether `fn` lies in a loaded object that exports vramshim_shim_copy: this shim or another copy.
bool in_a_shim_copy(DlsymFn lookup, void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr || info.dli_fname[0] == '\0') {
    return false;
  }
  void* object = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (object == nullptr) return false;
  const bool copy = lookup(object, "vramshim_shim_copy") != nullptr;
  dlclose(object);
  return copy;
}

}  // namespace

DriverLookup find_driver_symbol(const char* name, void** fn) {
  *fn = nullptr;
  DlsymFn lookup = real_dlsym();
  if (lookup == nullptr) return DriverLookup::kNoDriver;
  void* next = lookup(RTLD_NEXT, name);
  if (next != nullptr && !is_hook_address(next) && !in_a_shim_copy(lookup, next)) {
    *fn = next;
    return DriverLookup::kFound;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return DriverLookup::kNoDriver;
  *fn = lookup(driver, name);
  dlclose(driver);
  return *fn != nullptr ? DriverLookup::kFound : DriverLookup::kMissing;
}

}  // namespace vramshim::intercept
