// VRAMSHIM_PYTHON: whether stacks of Python processes get their Python frames.
#pragma once

namespace vramshim::python {

enum class PythonMode {
  kAuto,  // Python frames when the process runs a supported CPython, native-only stacks otherwise
  kOff,   // native-only stacks, and no look at the interpreter at all
};

// Parses "auto" or "off" (also "on"/"1" for auto and "0" for off). Returns false and leaves `mode`
// untouched for anything else; the caller warns and keeps the default (auto).
bool parse_python_mode(const char* text, PythonMode* mode);

}  // namespace vramshim::python
