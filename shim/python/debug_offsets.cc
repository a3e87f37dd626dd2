#include "shim/python/debug_offsets.h"

#include <cstdint>
#include <cstring>

namespace vramshim::python {

namespace {

// Indices of the uint64_t fields of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h
// of 3.13): the struct is a cookie followed by uint64_t fields only.
enum Field313 : int {
  kVersion = 1,
  kFreeThreaded = 2,
  kThreadCurrentFrame = 23,
  kFramePrevious = 29,
  kFrameExecutable = 30,
  kFrameInstrPtr = 31,
  kFrameOwner = 33,
  kCodeFilename = 35,
  kCodeQualname = 37,
  kCodeLinetable = 38,
  kCodeFirstlineno = 39,
  kCodeAdaptive = 43,
  kObjectType = 45,
  kBytesSize = 65,
  kBytesData = 66,
  kStrState = 68,
  kStrLength = 69,
  kStrAsciiSize = 70,
  kFieldCount = 73,
};

constexpr uint64_t kMaxOffset = 4096;  // every field the shim reads lies well inside this

}  // namespace

std::optional<PythonLayout> layout_from_debug_offsets_313(const void* runtime) {
  if (runtime == nullptr) return std::nullopt;
  uint64_t fields[kFieldCount];
  std::memcpy(fields, runtime, sizeof(fields));
  if (std::memcmp(fields, "xdebugpy", 8) != 0) return std::nullopt;
  const PythonVersion version = version_from_hex(static_cast<uint32_t>(fields[kVersion]));
  if (version.major != 3 || version.minor != 13 || fields[kFreeThreaded] != 0) return std::nullopt;
  if (fields[kObjectType] != 8) return std::nullopt;  // the PyObject header of a GIL build

  // f_executable is the frame's first field; every other field the shim reads follows a header.
  if (fields[kFrameExecutable] > kMaxOffset) return std::nullopt;
  const int after_header[] = {kThreadCurrentFrame, kFramePrevious, kFrameInstrPtr, kFrameOwner,
                              kCodeFilename,       kCodeQualname,  kCodeLinetable, kCodeFirstlineno,
                              kCodeAdaptive,       kBytesSize,     kBytesData,     kStrState,
                              kStrLength,          kStrAsciiSize};
  for (int field : after_header) {
    if (fields[field] == 0 || fields[field] > kMaxOffset) return std::nullopt;
  }

  PythonLayout layout;
  layout.version = version;
  layout.thread_cframe = -1;
  layout.cframe_current_frame = static_cast<int32_t>(fields[kThreadCurrentFrame]);
  layout.frame_previous = static_cast<int32_t>(fields[kFramePrevious]);
  layout.frame_code = static_cast<int32_t>(fields[kFrameExecutable]);
  layout.frame_instruction = static_cast<int32_t>(fields[kFrameInstrPtr]);
  layout.frame_marker = static_cast<int32_t>(fields[kFrameOwner]);
  layout.cstack_owner = 3;
  layout.instruction = InstructionField::kInstructionPointer;
  layout.marker = EvalCallMarker::kCStackOwner;
  layout.code_filename = static_cast<int32_t>(fields[kCodeFilename]);
  layout.code_name = static_cast<int32_t>(fields[kCodeQualname]);
  layout.code_firstlineno = static_cast<int32_t>(fields[kCodeFirstlineno]);
  layout.code_linetable = static_cast<int32_t>(fields[kCodeLinetable]);
  layout.code_units = static_cast<int32_t>(fields[kCodeAdaptive]);
  layout.line_table = LineTableFormat::kLocations;
  layout.object_type = 8;
  layout.bytes_size = static_cast<int32_t>(fields[kBytesSize]);
  layout.bytes_data = static_cast<int32_t>(fields[kBytesData]);
  layout.str_length = static_cast<int32_t>(fields[kStrLength]);
  layout.str_state = static_cast<int32_t>(fields[kStrState]);
  layout.str_ascii_size = static_cast<int32_t>(fields[kStrAsciiSize]);
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject since 3.12.
  layout.str_compact_size = layout.str_ascii_size + 16;
  return layout;
}

}  // namespace vramshim::python
