// Captures the return addresses of the calling thread, innermost first, without the shim's own
// frames.
#pragma once

#include <cstdint>

#include "shim/attribution/module_range.h"

namespace vramshim::attribution {

enum class Unwinder : uint8_t {
  kLibunwind,  // libunwind's unw_backtrace, from a private (RTLD_LOCAL) dlopen of libunwind.so.8
  kLibgcc,     // libgcc's _Unwind_Backtrace: slower, always present
};

// libunwind when libunwind.so.8 loads and VRAMSHIM_TEST_NO_LIBUNWIND is not "1", else libgcc.
// Loads libunwind and reads the variable on the first call only: call it at init.
Unwinder preferred_unwinder();

class StackCapture {
 public:
  static constexpr int kMaxDepth = 256;

  // depth: frames kept per stack, clamped to [1, kMaxDepth]. A libunwind request falls back to
  // libgcc when libunwind cannot be loaded. Leading frames inside `own_module` are dropped.
  StackCapture(int depth, Unwinder unwinder, ModuleRange own_module);

  // Writes at most depth() return addresses of the caller's stack into `frames` (room for
  // kMaxDepth), innermost first, and returns how many. Takes no lock and does not allocate
  // after the calling thread's first capture.
  int capture(uint64_t* frames) const;

  int depth() const { return depth_; }
  Unwinder unwinder() const { return unwinder_; }

 private:
  int depth_;
  Unwinder unwinder_;
  ModuleRange own_module_;
};

}  // namespace vramshim::attribution
