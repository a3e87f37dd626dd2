#include "shim/runtime/calling_device.h"

namespace vramshim::runtime {
namespace {

thread_local int t_calling_device = 0;

}  // namespace

void set_calling_device(int device) { t_calling_device = device; }
int calling_device() { return t_calling_device; }

}  // namespace vramshim::runtime
