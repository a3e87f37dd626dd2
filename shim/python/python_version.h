// The version of the CPython interpreter running in this process.
#pragma once

#include <cstdint>

namespace vramshim::python {

struct PythonVersion {
  int major = 0;
  int minor = 0;
  int micro = 0;

  bool known() const { return major != 0; }
};

// From the PY_VERSION_HEX value CPython 3.11+ exports as Py_Version (0x030B07F0 is 3.11.7).
PythonVersion version_from_hex(uint32_t hex);

// From the text Py_GetVersion() returns ("3.10.13 (main, …) [GCC …]"); unknown on anything else.
PythonVersion parse_version_text(const char* text);

}  // namespace vramshim::python
