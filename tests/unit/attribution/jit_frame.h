// A frame without unwind information, as JIT code or a perf trampoline makes, for the unwinders'
// tests.
#pragma once

namespace vramshim::testing {

// Calls at_bottom(argument) on a new thread, from a trampoline written into an anonymous page (an
// x86-64 one). False, without calling it, when no executable page can be mapped.
bool call_from_jit_frame(void (*at_bottom)(void*), void* argument);

}  // namespace vramshim::testing
