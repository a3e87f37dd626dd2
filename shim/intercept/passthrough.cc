#include "shim/intercept/passthrough.h"

#include <cstdlib>
#include <cstring>

namespace vramshim::intercept {

bool shim_disabled() {
  static const bool disabled = [] {
    const char* value = std::getenv("VRAMSHIM_DISABLE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return disabled;
}

}  // namespace vramshim::intercept
