#include "shim/python/python_layout.h"

#include "shim/python/debug_offsets.h"

namespace vramshim::python {

namespace {

// Offsets measured with offsetof() against each version's headers (Py_BUILD_CORE, x86-64 and
// aarch64 alike: every field is pointer- or int-aligned), stable across the version's patch
// releases.
PythonLayout layout_310() {
  PythonLayout l;
  l.thread_cframe = -1;
  l.cframe_current_frame = 24;  // PyThreadState.frame
  l.frame_previous = 24;        // PyFrameObject.f_back
  l.frame_code = 32;
  l.frame_instruction = 96;  // f_lasti
  l.instruction = InstructionField::kLastiIndex;
  l.marker = EvalCallMarker::kEveryFrame;
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  l.code_units = -1;
  l.line_table = LineTableFormat::kLineDeltas;
  l.str_ascii_size = 48;
  l.str_compact_size = 72;
  return l;
}

PythonLayout layout_311() {
  PythonLayout l;
  l.thread_cframe = 56;
  l.cframe_current_frame = 8;
  l.frame_previous = 48;
  l.frame_code = 32;
  l.frame_instruction = 56;  // prev_instr
  l.frame_marker = 68;       // is_entry
  l.instruction = InstructionField::kInstructionPointer;
  l.marker = EvalCallMarker::kIsEntryFlag;
  l.code_filename = 112;
  l.code_name = 128;  // co_qualname
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_units = 184;
  l.line_table = LineTableFormat::kLocations;
  l.str_ascii_size = 48;
  l.str_compact_size = 72;
  return l;
}

PythonLayout layout_312() {
  PythonLayout l;
  l.thread_cframe = 56;
  l.cframe_current_frame = 0;
  l.frame_previous = 8;
  l.frame_code = 0;
  l.frame_instruction = 56;  // prev_instr
  l.frame_marker = 70;       // owner
  l.entry_frame_owner = 3;   // FRAME_OWNED_BY_CSTACK
  l.instruction = InstructionField::kInstructionPointer;
  l.marker = EvalCallMarker::kEntryFrame;
  l.code_filename = 112;
  l.code_name = 128;  // co_qualname
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_units = 192;
  l.line_table = LineTableFormat::kLocations;
  l.str_ascii_size = 40;
  l.str_compact_size = 56;
  return l;
}

}  // namespace

std::optional<PythonLayout> layout_for(PythonVersion version, const void* runtime) {
  if (version.major != 3) return std::nullopt;
  std::optional<PythonLayout> layout;
  switch (version.minor) {
    case 10:
      layout = layout_310();
      break;
    case 11:
      layout = layout_311();
      break;
    case 12:
      layout = layout_312();
      break;
    case 13:
    case 14:
    case 15:
      return layout_from_debug_offsets(runtime, version.minor);
    default:
      return std::nullopt;
  }
  layout->version = version;
  return layout;
}

}  // namespace vramshim::python
