// Finding a real driver function by its exported name, without ever finding the shim's own hook.
#pragma once

namespace vramshim::intercept {

enum class DriverLookup {
  kFound,
  kMissing,   // the driver is loaded and does not define the name
  kNoDriver,  // no driver found yet: ask again later
};

// First the next definition after the shim in the global scope (unless another copy of the shim
// defines it), then the already-loaded
// libcuda.so.1 (covers a driver dlopen'ed with RTLD_LOCAL, as XLA does). Never loads the driver
// itself.
DriverLookup find_driver_symbol(const char* name, void** fn);

}  // namespace vramshim::intercept
