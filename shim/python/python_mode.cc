#include "shim/python/python_mode.h"

#include <cstring>

namespace vramshim::python {

bool parse_python_mode(const char* text, PythonMode* mode) {
  if (text == nullptr) return false;
  if (std::strcmp(text, "auto") == 0 || std::strcmp(text, "on") == 0 ||
      std::strcmp(text, "1") == 0) {
    *mode = PythonMode::kAuto;
    return true;
  }
  if (std::strcmp(text, "off") == 0 || std::strcmp(text, "0") == 0) {
    *mode = PythonMode::kOff;
    return true;
  }
  return false;
}

}  // namespace vramshim::python
