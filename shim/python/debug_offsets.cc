#include "shim/python/debug_offsets.h"

#include <cstdint>
#include <cstring>

namespace vramshim::python {

namespace {

// One version's _Py_DebugOffsets: the indices of the uint64_t fields the shim reads (the struct is
// a cookie followed by uint64_t fields only; it grows between minor versions and stays fixed
// within one), and what the version's headers say that the debug offsets do not.
struct DebugOffsetsFormat {
  int field_count = 0;
  int thread_current_frame = 0;
  int frame_previous = 0;
  int frame_executable = 0;
  int frame_instr_ptr = 0;
  int frame_owner = 0;
  int code_filename = 0;
  int code_qualname = 0;
  int code_linetable = 0;
  int code_firstlineno = 0;
  int code_adaptive = 0;
  int object_type = 0;
  int bytes_size = 0;
  int bytes_data = 0;
  int str_state = 0;
  int str_length = 0;
  int str_ascii_size = 0;
  int str_compact_size = -1;  // -1: not described; sizeof(PyASCIIObject) + 16 then

  uint8_t entry_frame_owner = 0;
  uint64_t executable_tag_bits = 0;
};

// Include/internal/pycore_runtime.h of 3.13.
constexpr DebugOffsetsFormat format_313() {
  DebugOffsetsFormat f;
  f.field_count = 73;
  f.thread_current_frame = 23;
  f.frame_previous = 29;
  f.frame_executable = 30;
  f.frame_instr_ptr = 31;
  f.frame_owner = 33;
  f.code_filename = 35;
  f.code_qualname = 37;
  f.code_linetable = 38;
  f.code_firstlineno = 39;
  f.code_adaptive = 43;
  f.object_type = 45;
  f.bytes_size = 65;
  f.bytes_data = 66;
  f.str_state = 68;
  f.str_length = 69;
  f.str_ascii_size = 70;
  f.entry_frame_owner = 3;    // FRAME_OWNED_BY_CSTACK
  f.executable_tag_bits = 0;  // f_executable is a PyObject*
  return f;
}

// Include/internal/pycore_debug_offsets.h of 3.14: fields added to the interpreter state, frame,
// code object parts, and a new set part, moved most indices.
constexpr DebugOffsetsFormat format_314() {
  DebugOffsetsFormat f;
  f.field_count = 95;
  f.thread_current_frame = 26;
  f.frame_previous = 32;
  f.frame_executable = 33;
  f.frame_instr_ptr = 34;
  f.frame_owner = 36;
  f.code_filename = 40;
  f.code_qualname = 42;
  f.code_linetable = 43;
  f.code_firstlineno = 44;
  f.code_adaptive = 48;
  f.object_type = 51;
  f.bytes_size = 75;
  f.bytes_data = 76;
  f.str_state = 78;
  f.str_length = 79;
  f.str_ascii_size = 80;
  // pycore_interpframe_structs.h: 3.14 inserts FRAME_OWNED_BY_INTERPRETER (3) before
  // FRAME_OWNED_BY_CSTACK (now 4), and the eval loop's entry frame takes the new value.
  f.entry_frame_owner = 3;
  // f_executable is a _PyStackRef; in a GIL build PyStackRef_AsPyObjectBorrow clears Py_TAG_REFCNT
  // (pycore_stackref.h). A tagged int (Py_INT_TAG, 3) keeps bit 1 and fails the alignment check.
  f.executable_tag_bits = 1;
  return f;
}

// Include/internal/pycore_debug_offsets.h of 3.15: thread_state grew past current_frame, and the
// struct now gives sizeof(PyCompactUnicodeObject). The rest is as in 3.14:
// FRAME_OWNED_BY_INTERPRETER is still 3 (FRAME_OWNED_BY_CSTACK is gone), f_executable still a
// _PyStackRef.
constexpr DebugOffsetsFormat format_315() {
  DebugOffsetsFormat f = format_314();
  f.field_count = 111;
  f.frame_previous = 40;
  f.frame_executable = 41;
  f.frame_instr_ptr = 42;
  f.frame_owner = 44;
  f.code_filename = 48;
  f.code_qualname = 50;
  f.code_linetable = 51;
  f.code_firstlineno = 52;
  f.code_adaptive = 56;
  f.object_type = 59;
  f.bytes_size = 87;
  f.bytes_data = 88;
  f.str_state = 90;
  f.str_length = 91;
  f.str_ascii_size = 92;
  f.str_compact_size = 93;
  return f;
}

constexpr int kMaxFieldCount = 111;
static_assert(format_313().field_count <= kMaxFieldCount &&
              format_314().field_count <= kMaxFieldCount &&
              format_315().field_count <= kMaxFieldCount);
constexpr int kCookieField = 0;
constexpr int kVersionField = 1;
constexpr int kFreeThreadedField = 2;
constexpr uint64_t kMaxOffset = 4096;  // every field the shim reads lies well inside this

bool format_for(int minor, DebugOffsetsFormat* format) {
  switch (minor) {
    case 13:
      *format = format_313();
      return true;
    case 14:
      *format = format_314();
      return true;
    case 15:
      *format = format_315();
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<PythonLayout> layout_from_debug_offsets(const void* runtime, int minor) {
  DebugOffsetsFormat f;
  if (runtime == nullptr || !format_for(minor, &f)) return std::nullopt;
  uint64_t fields[kMaxFieldCount];
  // The header first: the fields of another version's struct may run past the end of this one.
  constexpr size_t kHeaderFields = kFreeThreadedField + 1;
  std::memcpy(fields, runtime, kHeaderFields * sizeof(uint64_t));
  if (std::memcmp(&fields[kCookieField], "xdebugpy", 8) != 0) return std::nullopt;
  const PythonVersion version = version_from_hex(static_cast<uint32_t>(fields[kVersionField]));
  // Final releases only: an alpha or beta may have fields this version's map does not know of
  // before the ones it reads, which it would then read at the wrong places.
  constexpr uint64_t kFinalRelease = 0xF0;
  if (version.major != 3 || version.minor != minor || fields[kFreeThreadedField] != 0 ||
      (fields[kVersionField] & 0xF0) != kFinalRelease) {
    return std::nullopt;
  }
  std::memcpy(fields, runtime, f.field_count * sizeof(uint64_t));
  if (fields[f.object_type] != 8) return std::nullopt;  // the PyObject header of a GIL build

  // f_executable and previous are the frame's first fields in every version the map knows; every
  // other field the shim reads follows a header. A map that finds them elsewhere is not this
  // struct's.
  if (fields[f.frame_executable] != 0 || fields[f.frame_previous] != 8) return std::nullopt;
  const int after_header[] = {f.thread_current_frame, f.frame_previous,   f.frame_instr_ptr,
                              f.frame_owner,          f.code_filename,    f.code_qualname,
                              f.code_linetable,       f.code_firstlineno, f.code_adaptive,
                              f.bytes_size,           f.bytes_data,       f.str_state,
                              f.str_length,           f.str_ascii_size};
  for (int field : after_header) {
    if (fields[field] == 0 || fields[field] > kMaxOffset) return std::nullopt;
  }
  const auto offset = [&fields](int field) { return static_cast<int32_t>(fields[field]); };

  PythonLayout layout;
  layout.version = version;
  layout.thread_cframe = -1;
  layout.cframe_current_frame = offset(f.thread_current_frame);
  layout.frame_previous = offset(f.frame_previous);
  layout.frame_code = offset(f.frame_executable);
  layout.frame_code_tag_bits = f.executable_tag_bits;
  layout.frame_instruction = offset(f.frame_instr_ptr);
  layout.frame_marker = offset(f.frame_owner);
  layout.entry_frame_owner = f.entry_frame_owner;
  layout.instruction = InstructionField::kInstructionPointer;
  layout.marker = EvalCallMarker::kEntryFrame;
  layout.code_filename = offset(f.code_filename);
  layout.code_name = offset(f.code_qualname);
  layout.code_firstlineno = offset(f.code_firstlineno);
  layout.code_linetable = offset(f.code_linetable);
  layout.code_units = offset(f.code_adaptive);
  layout.line_table = LineTableFormat::kLocations;
  layout.object_type = 8;
  layout.bytes_size = offset(f.bytes_size);
  layout.bytes_data = offset(f.bytes_data);
  layout.str_length = offset(f.str_length);
  layout.str_state = offset(f.str_state);
  layout.str_ascii_size = offset(f.str_ascii_size);
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject since 3.12.
  layout.str_compact_size = layout.str_ascii_size + 16;
  if (f.str_compact_size >= 0) {
    const uint64_t compact_size = fields[f.str_compact_size];
    if (compact_size <= fields[f.str_ascii_size] || compact_size > kMaxOffset) return std::nullopt;
    layout.str_compact_size = static_cast<int32_t>(compact_size);
  }
  return layout;
}

}  // namespace vramshim::python
