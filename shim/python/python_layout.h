// Where the fields the frame walker and the frame resolver read lie in one CPython version's
// structures (thread state, frame, code object, str, bytes).
#pragma once

#include <cstdint>
#include <optional>

#include "shim/python/python_version.h"

namespace vramshim::python {

// What a frame's instruction field holds.
enum class InstructionField : uint8_t {
  kLastiIndex,  // 3.10 f_lasti: int, index of the last instruction in code units, -1 at start
  // 3.11-3.12 prev_instr, 3.13+ instr_ptr: a pointer into the code object's instructions; both
  // point at the instruction that is running when the frame makes a call.
  kInstructionPointer,
};

// How a C-level call of _PyEval_EvalFrameDefault shows in the frame chain.
enum class EvalCallMarker : uint8_t {
  kEveryFrame,   // 3.10: one C call per Python frame
  kIsEntryFlag,  // 3.11: the outermost frame of a C call has is_entry set
  kEntryFrame,   // 3.12+: the C call pushes an entry frame, told by its owner, below its frames
};

enum class LineTableFormat : uint8_t {
  kLineDeltas,  // 3.10 co_linetable: (byte delta, line delta) pairs, addresses in bytes
  kLocations,   // 3.11+ co_linetable: PEP 657 location entries, addresses in code units
};

struct PythonLayout {
  PythonVersion version;

  // Thread state → innermost frame: *(*(tstate + thread_cframe) + cframe_current_frame), or
  // *(tstate + cframe_current_frame) when thread_cframe < 0.
  int32_t thread_cframe = -1;
  int32_t cframe_current_frame = 0;

  int32_t frame_previous = 0;
  int32_t frame_code = 0;
  uintptr_t frame_code_tag_bits = 0;  // 3.14+: f_executable is a tagged _PyStackRef
  int32_t frame_instruction = 0;
  int32_t frame_marker = -1;  // is_entry (bool) or owner (char); unused with kEveryFrame
  // The entry frame's owner: FRAME_OWNED_BY_CSTACK on 3.12-3.13, FRAME_OWNED_BY_INTERPRETER on
  // 3.14+ (3 both times, after a renumbering).
  uint8_t entry_frame_owner = 3;
  InstructionField instruction = InstructionField::kLastiIndex;
  EvalCallMarker marker = EvalCallMarker::kEveryFrame;

  int32_t code_filename = 0;
  int32_t code_name = 0;  // co_qualname where it exists (3.11+), else co_name
  int32_t code_firstlineno = 0;
  int32_t code_linetable = 0;
  int32_t code_units = -1;  // co_code_adaptive: the instructions inside the code object (3.11+)
  LineTableFormat line_table = LineTableFormat::kLineDeltas;

  int32_t object_type = 8;  // ob_type
  int32_t bytes_size = 16;  // ob_size
  int32_t bytes_data = 32;  // ob_sval

  int32_t str_length = 16;        // code points
  int32_t str_state = 32;         // bit field: kind in bits 2-4, compact bit 5, ascii bit 6
  int32_t str_ascii_size = 48;    // sizeof(PyASCIIObject): ASCII data follows
  int32_t str_compact_size = 72;  // sizeof(PyCompactUnicodeObject): other compact data follows
  // PyCompactUnicodeObject's utf8_length and utf8 follow PyASCIIObject in every version.
};

// The layout of 3.10 to 3.15 (read from the _Py_DebugOffsets at the start of _PyRuntime for 3.13+,
// which must then be non-null); nullopt for any other version, or when the debug offsets do not
// describe a default (GIL) build of that version.
std::optional<PythonLayout> layout_for(PythonVersion version, const void* runtime);

}  // namespace vramshim::python
