// The bound on device numbers, which reports and traces share.
#pragma once

#include <cstdint>

namespace vramshim::analyzer {

// Device numbers are CUDA device ordinals, below this (shim/report/FORMAT.md); views and exports
// index by them.
inline constexpr int64_t kMaxDeviceNumber = 65536;

}  // namespace vramshim::analyzer
