// VRAMSHIM_DISABLE=1: every hook and every door passes straight through to the driver.
#pragma once

namespace vramshim::intercept {

// Read once, on first use (hooks can run before the shim's constructors); from the initial
// environment in /proc/self/environ when a call comes before the C library has set up environ
// (a preinit function, as sanitizers' interceptors look functions up with dlsym).
bool shim_disabled();

}  // namespace vramshim::intercept
