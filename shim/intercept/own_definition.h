// Whether a loaded object defines a function itself: what tells a wrapper around a driver function
// from code that only looks the driver up.
#pragma once

#include "shim/intercept/real_dlsym.h"

namespace vramshim::intercept {

// Whether the loaded object holding `code` (an address inside it, e.g. a return address) defines
// `name` itself. `lookup` is glibc's dlsym. Unknown (an address in no object, an object the loader
// cannot name) counts as defining it.
bool defines_itself(const void* code, const char* name, DlsymFn lookup);

// Whether `code` lies in the same loaded object as `other`.
bool same_object(const void* code, const void* other);

}  // namespace vramshim::intercept
