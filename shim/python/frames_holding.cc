#include "shim/python/frames_holding.h"

#include <unwind.h>

namespace vramshim::python {

namespace {

constexpr int kMaxFrames = 256;

struct UnwoundStack {
  uintptr_t return_address[kMaxFrames];
  uintptr_t stack_pointer[kMaxFrames];
  int count = 0;
};

// For the frame whose code holds the context's IP, _Unwind_GetCFA gives that frame's stack pointer
// at its call (the canonical frame address of the callee it unwound from, in libgcc and LLVM's
// libunwind alike): its own locals lie from there up to the next frame's value.
_Unwind_Reason_Code record_frame(_Unwind_Context* context, void* data) {
  auto* stack = static_cast<UnwoundStack*>(data);
  if (stack->count == kMaxFrames) return _URC_END_OF_STACK;
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  stack->return_address[stack->count] = ip;
  stack->stack_pointer[stack->count] = _Unwind_GetCFA(context);
  ++stack->count;
  return _URC_NO_REASON;
}

}  // namespace

void frames_holding(const uintptr_t* addresses, int count, uintptr_t* return_addresses) {
  UnwoundStack stack;
  _Unwind_Backtrace(record_frame, &stack);
  for (int a = 0; a < count; ++a) {
    return_addresses[a] = 0;
    for (int i = 0; i + 1 < stack.count; ++i) {
      if (addresses[a] >= stack.stack_pointer[i] && addresses[a] < stack.stack_pointer[i + 1]) {
        return_addresses[a] = stack.return_address[i];
        break;
      }
    }
  }
}

}  // namespace vramshim::python
