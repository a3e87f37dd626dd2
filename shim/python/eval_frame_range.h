// The code of CPython's bytecode evaluation loop, to recognise its frames in a native stack.
#pragma once

#include <cstdint>

namespace vramshim::python {

struct EvalFrameRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;  // begin == end: unknown, no native frame matches

  // A return address lies just after its call instruction, so it may equal `end`.
  bool contains_return_address(uint64_t address) const { return address > begin && address <= end; }

  // The extent of the function at `function` (_PyEval_EvalFrameDefault), from the size its
  // module's dynamic symbol table gives it (dladdr1). Empty when it has no size. Call at init.
  static EvalFrameRange of_function(const void* function);
};

}  // namespace vramshim::python
