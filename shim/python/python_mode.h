// VRAMSHIM_PYTHON (read with the other variables, shim/control/config.cc): whether stacks of
// Python processes get their Python frames.
#pragma once

namespace vramshim::python {

enum class PythonMode {
  kAuto,  // Python frames when the process runs a supported CPython, native-only stacks otherwise
  kOff,   // native-only stacks, and no look at the interpreter at all
};

}  // namespace vramshim::python
