// The delays the simulator imitates: a driver call's cost and the device time of each queued
// operation.
#pragma once

#include <atomic>
#include <cstdint>

namespace vramshim::fakecuda {

// Per cuMemAlloc*/cuMemFree* call (FAKECUDA_ALLOC_DELAY_US).
extern std::atomic<uint64_t> g_alloc_delay_us;
// Per asynchronous operation run by a stream worker (FAKECUDA_OP_DELAY_US), like a kernel's
// duration.
extern std::atomic<uint64_t> g_op_delay_us;

// Spins, rather than sleeps, so that delays of tens of microseconds are kept accurately.
void delayMicros(uint64_t us);

}  // namespace vramshim::fakecuda
