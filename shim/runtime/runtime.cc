// Composition root of the shim: wires hooks → pools → attribution → report and control; init, fork, exit.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/runtime/call_summary.h"

namespace vramshim::runtime {
namespace {

__attribute__((destructor)) void at_unload() {
  const char* level = std::getenv("VRAMSHIM_LOG");
  if (level != nullptr && std::strcmp(level, "debug") == 0) {
    std::fprintf(stderr, "vramshim: %s\n", call_summary().c_str());
  }
}

}  // namespace
}  // namespace vramshim::runtime
