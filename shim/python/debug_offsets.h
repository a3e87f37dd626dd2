// CPython's _Py_DebugOffsets (3.13+): the interpreter's own description of its structures, the
// first field of _PyRuntime (what out-of-process debuggers read).
#pragma once

#include <optional>

#include "shim/python/python_layout.h"

namespace vramshim::python {

// The layout described by the debug offsets at `runtime` (the address of _PyRuntime) of a CPython
// 3.`minor` (13, 14 or 15). nullopt for another minor version, or when the cookie is missing, the
// offsets' own version is not 3.`minor`, the build is free-threaded, or an offset is implausible.
std::optional<PythonLayout> layout_from_debug_offsets(const void* runtime, int minor);

}  // namespace vramshim::python
