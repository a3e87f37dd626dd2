// The C library's own dlsym, found without calling the public (hooked) dlsym.
#pragma once

namespace vramshim::intercept {

// glibc's dlsym, resolved once with dlvsym(RTLD_NEXT, "dlsym", GLIBC_2.34 then GLIBC_2.2.5).
// Null only if neither version exists. Safe to call from any thread, at any time.
using DlsymFn = void* (*)(void* handle, const char* name);
DlsymFn real_dlsym();

}  // namespace vramshim::intercept
