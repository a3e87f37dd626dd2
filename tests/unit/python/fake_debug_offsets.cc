#include "tests/unit/python/fake_debug_offsets.h"

#include <cstring>
#include <stdexcept>

namespace vramshim::python::testing {

namespace {

struct Field {
  const char* name;
  int index[3];  // in 3.13's, 3.14's, 3.15's struct, in uint64_t from the cookie; -1: absent
  uint64_t value[3];
};

// Indices counted from Include/internal/pycore_runtime.h (3.13) and pycore_debug_offsets.h (3.14,
// 3.15); values read from the running interpreters.
const Field kFields[] = {
    {"version", {1, 1, 1}, {0x030D00F0, 0x030E0AF0, 0x030F02F0}},
    {"free_threaded", {2, 2, 2}, {0, 0, 0}},
    {"thread_state.current_frame", {23, 26, 26}, {72, 72, 72}},
    {"interpreter_frame.previous", {29, 32, 40}, {8, 8, 8}},
    {"interpreter_frame.executable", {30, 33, 41}, {0, 0, 0}},
    {"interpreter_frame.instr_ptr", {31, 34, 42}, {56, 56, 56}},
    {"interpreter_frame.owner", {33, 36, 44}, {70, 74, 74}},
    {"code_object.filename", {35, 40, 48}, {112, 112, 112}},
    {"code_object.qualname", {37, 42, 50}, {128, 128, 128}},
    {"code_object.linetable", {38, 43, 51}, {136, 136, 136}},
    {"code_object.firstlineno", {39, 44, 52}, {68, 68, 68}},
    {"code_object.co_code_adaptive", {43, 48, 56}, {200, 208, 208}},
    {"pyobject.ob_type", {45, 51, 59}, {8, 8, 8}},
    {"bytes_object.ob_size", {65, 75, 87}, {16, 16, 16}},
    {"bytes_object.ob_sval", {66, 76, 88}, {32, 32, 32}},
    {"unicode_object.state", {68, 78, 90}, {32, 32, 32}},
    {"unicode_object.length", {69, 79, 91}, {16, 16, 16}},
    {"unicode_object.asciiobject_size", {70, 80, 92}, {40, 40, 40}},
    {"unicode_object.compactunicodeobject_size", {-1, -1, 93}, {0, 0, 56}},
};

}  // namespace

FakeDebugOffsets::FakeDebugOffsets(int minor) {
  if (minor < 13 || minor > 15) throw std::invalid_argument("3.13, 3.14 or 3.15 only");
  const int column = minor - 13;
  const size_t field_counts[] = {73, 95, 111};
  fields_.assign(field_counts[column], 0);
  std::memcpy(fields_.data(), "xdebugpy", 8);
  for (const Field& field : kFields) {
    if (field.index[column] < 0) continue;
    index_[field.name] = field.index[column];
    fields_[field.index[column]] = field.value[column];
  }
}

uint64_t& FakeDebugOffsets::operator[](const std::string& name) {
  if (name == "cookie") return fields_[0];
  return fields_[index_.at(name)];
}

}  // namespace vramshim::python::testing
