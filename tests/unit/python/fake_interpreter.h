// A CPython 3.12+-shaped interpreter laid out in ordinary memory: thread state, frames (with entry
// frames), code objects, str and bytes objects, at the offsets a given layout says. Lets the frame
// walker and the frame table be tested without Python, including torn and cyclic frame chains.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "shim/python/interpreter_symbols.h"
#include "shim/python/python_layout.h"

namespace vramshim::python::testing {

class FakeInterpreter {
 public:
  // `layout` must have entry frames (3.12+). Frames reference their code objects with the
  // layout's tag bits set, as 3.14+ does for immortal (deferred) objects.
  explicit FakeInterpreter(const PythonLayout& layout);

  // A code object; `line_table` is a 3.11+ location table.
  uintptr_t add_code(const std::string& file, const std::string& qualname, int firstlineno,
                     const std::vector<uint8_t>& line_table);
  // A frame running `code` at instruction `unit`, whose previous frame is `previous`.
  uintptr_t add_frame(uintptr_t code, int unit, uintptr_t previous);
  // The entry frame the eval loop pushes on the C stack below the frames one call of it runs.
  uintptr_t add_entry_frame(uintptr_t previous);
  // A frame whose code field points at an object that is not a code object.
  uintptr_t add_torn_frame(uintptr_t previous);
  void set_previous(uintptr_t frame, uintptr_t previous);
  // The calling thread's innermost frame (through its thread state); 0 for no thread state.
  void set_current_frame(uintptr_t frame);
  void set_finalizing(bool finalizing);

  const InterpreterSymbols& symbols() const { return symbols_; }
  const PythonLayout& layout() const { return layout_; }

 private:
  uintptr_t allocate(size_t bytes);
  uintptr_t add_str(const std::string& text);
  uintptr_t add_bytes(const std::vector<uint8_t>& data);

  PythonLayout layout_;
  InterpreterSymbols symbols_;
  std::deque<std::vector<uint64_t>> blocks_;  // 8-byte aligned storage that never moves
  uintptr_t thread_state_ = 0;
  uintptr_t current_frame_holder_ = 0;  // the thread state, or its _PyCFrame on 3.12
};

}  // namespace vramshim::python::testing
