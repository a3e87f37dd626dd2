// A driver call made in another context than the calling thread's current one.
#pragma once

#include <optional>

#include "shim/intercept/cuda_api.h"
#include "shim/intercept/driver_functions.h"

namespace vramshim::runtime {

// Runs `call` with `context` made current on the calling thread for it (cuCtxPushCurrent,
// cuCtxPopCurrent): what `call` returns, or nothing when the context cannot be made current.
template <typename Call>
auto with_context(CUcontext context, Call&& call) -> std::optional<decltype(call())> {
  if (real::cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) return std::nullopt;
  auto result = call();
  CUcontext popped = nullptr;
  real::cuCtxPopCurrent_v2(&popped);
  return result;
}

}  // namespace vramshim::runtime
