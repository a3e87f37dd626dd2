#include "shim/intercept/driver_functions.h"

#include "shim/intercept/driver_symbol.h"

namespace vramshim::intercept {

std::atomic<void*> g_driver_functions[static_cast<int>(DriverFunctionId::kCount)];

namespace {

const char* const kNames[] = {
#define VRAMSHIM_DRIVER_FUNCTION(name, params, args) #name,
#include "shim/intercept/driver_functions.def"
#undef VRAMSHIM_DRIVER_FUNCTION
};

}  // namespace

void* resolve_driver_function(DriverFunctionId id) {
  void* fn = nullptr;
  if (find_driver_symbol(kNames[static_cast<int>(id)], &fn) != DriverLookup::kFound) return nullptr;
  g_driver_functions[static_cast<int>(id)].store(fn, std::memory_order_release);
  return fn;
}

}  // namespace vramshim::intercept
