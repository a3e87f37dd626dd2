#include "shim/intercept/driver_symbol.h"

#include <dlfcn.h>

#include "shim/intercept/hook_table.h"
#include "shim/intercept/real_dlsym.h"

namespace vramshim::intercept {

DriverLookup find_driver_symbol(const char* name, void** fn) {
  *fn = nullptr;
  DlsymFn lookup = real_dlsym();
  if (lookup == nullptr) return DriverLookup::kNoDriver;
  void* next = lookup(RTLD_NEXT, name);
  if (next != nullptr && !is_hook_address(next)) {
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
