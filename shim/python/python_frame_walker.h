// Reads the calling thread's Python frames without the GIL, without calling into the interpreter
// (beyond lock-free reads of its state) and without creating Python objects.
#pragma once

#include <cstdint>

#include "shim/python/interpreter_symbols.h"
#include "shim/python/python_layout.h"

namespace vramshim::python {

// One Python frame as captured: enough to find (or later resolve) its file, function and line.
struct PythonFrameRef {
  uintptr_t code;  // the code object
  uintptr_t name;  // its co_qualname (co_name on 3.10): guards against code address reuse
  // Its co_filename and line table: guard against code address reuse too (Jupyter's cells and
  // exec'd sources make code objects of the same name and first line in other files, often at the
  // address a freed one had).
  uintptr_t filename;
  uintptr_t linetable;
  int32_t instruction;  // index of the instruction running, in code units; -1 before the first
  int32_t firstlineno;  // guards against code address reuse too
  bool ends_eval_call;  // the outermost frame run by one C call of _PyEval_EvalFrameDefault
};

class PythonFrameWalker {
 public:
  static constexpr int kMaxFrames = 256;

  // `symbols` must have an interpreter; `layout` must be the running version's.
  PythonFrameWalker(const InterpreterSymbols& symbols, const PythonLayout& layout);

  // Writes at most `max` frames of the calling thread, innermost first, and returns how many: 0
  // when the thread has no Python thread state or the interpreter is not running (not initialized
  // yet, or finalizing: finalization frees the states of daemon threads that may be in this call).
  // Every pointer is checked for plausibility and every code object for its type before use; the
  // walk is bounded, and it stops at the first frame that does not hold a code object, so a torn
  // chain yields fewer frames. Left: a daemon thread descheduled between the finalizing check and
  // its reads while the main thread frees its frames could read unmapped memory.
  int capture(PythonFrameRef* out, int max) const;

  // Writes the addresses of at most `max` of the calling thread's entry frames (3.12+), innermost
  // first, and returns how many; 0 for layouts without entry frames. Each lies where the C call of
  // _PyEval_EvalFrameDefault that pushed it keeps its locals: on this thread's C stack.
  int entry_frames(uintptr_t* out, int max) const;

 private:
  uintptr_t innermost_frame() const;
  int32_t instruction_of(uintptr_t frame, uintptr_t code) const;

  InterpreterSymbols symbols_;
  PythonLayout layout_;
};

}  // namespace vramshim::python
