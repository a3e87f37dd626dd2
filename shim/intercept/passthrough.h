// VRAMSHIM_DISABLE=1: every hook and every door passes straight through to the driver.
#pragma once

namespace vramshim::intercept {

// Read once, on first use (hooks can run before the shim's constructors).
bool shim_disabled();

}  // namespace vramshim::intercept
