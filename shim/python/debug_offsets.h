// CPython 3.13's _Py_DebugOffsets: the interpreter's own description of its structures, the first
// field of _PyRuntime (what out-of-process debuggers read).
#pragma once

#include <optional>

#include "shim/python/python_layout.h"

namespace vramshim::python {

// The layout described by the debug offsets at `runtime` (the address of _PyRuntime). nullopt when
// the cookie is missing, the version is not 3.13, the build is free-threaded, or an offset is
// implausible.
std::optional<PythonLayout> layout_from_debug_offsets_313(const void* runtime);

}  // namespace vramshim::python
