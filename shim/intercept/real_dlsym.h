// The C library's own dlsym and dlopen, found without calling the public (hooked) ones.
#pragma once

namespace vramshim::intercept {

// glibc's own definition of `name` (one of its dl* functions), with dlvsym(RTLD_NEXT, name,
// GLIBC_2.34 then GLIBC_2.2.5); null if neither version exists.
void* glibc_function(const char* name);

// glibc's dlsym, resolved once. Null only if neither version exists. Safe to call from any thread,
// at any time.
using DlsymFn = void* (*)(void* handle, const char* name);
DlsymFn real_dlsym();

}  // namespace vramshim::intercept
