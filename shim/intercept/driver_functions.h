// Typed calls to the driver functions of driver_functions.def (vramshim::real::NAME).
#pragma once

#include <atomic>

#include "shim/intercept/cuda_api.h"

namespace vramshim::intercept {

enum class DriverFunctionId : int {
#define VRAMSHIM_DRIVER_FUNCTION(name, params, args) name,
#include "shim/intercept/driver_functions.def"
#undef VRAMSHIM_DRIVER_FUNCTION
  kCount,
};

extern std::atomic<void*> g_driver_functions[static_cast<int>(DriverFunctionId::kCount)];
void* resolve_driver_function(DriverFunctionId id);

inline void* driver_function(DriverFunctionId id) {
  void* fn = g_driver_functions[static_cast<int>(id)].load(std::memory_order_acquire);
  return fn != nullptr ? fn : resolve_driver_function(id);
}

}  // namespace vramshim::intercept

namespace vramshim::real {
#define VRAMSHIM_DRIVER_FUNCTION(name, params, args)                                \
  inline CUresult name params {                                                     \
    using Fn = CUresult(*) params;                                                  \
    void* real_fn_ = intercept::driver_function(intercept::DriverFunctionId::name); \
    if (real_fn_ == nullptr) return CUDA_ERROR_NOT_INITIALIZED;                     \
    return reinterpret_cast<Fn>(real_fn_) args;                                     \
  }
#include "shim/intercept/driver_functions.def"
#undef VRAMSHIM_DRIVER_FUNCTION
}  // namespace vramshim::real
