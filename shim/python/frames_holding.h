// Which native frames of the calling thread hold given addresses of its stack.
#pragma once

#include <cstdint>

namespace vramshim::python {

// For each of the `count` addresses, the return address of the calling thread's native frame whose
// part of the stack holds it (a local of that frame's function: the return address lies in that
// function's code), or 0 when no frame found does. Unwinds the whole stack with libgcc's unwinder
// (at most 256 frames): slow, not for every allocation.
void frames_holding(const uintptr_t* addresses, int count, uintptr_t* return_addresses);

}  // namespace vramshim::python
