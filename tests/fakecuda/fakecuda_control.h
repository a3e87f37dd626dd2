// Test-control API of the simulated CUDA driver (tests/fakecuda/libcuda.so.1). Link against
// //tests/fakecuda:fakecuda or look the functions up with dlsym; none of them initializes the
// driver.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Calls made to one exported symbol, by its exact name ("cuMemAlloc_v2", "cuMemAllocAsync_ptsz"); 0
// if unknown.
uint64_t fakecuda_calls(const char* exported_symbol_name);
// Device memory allocated and not yet freed: device, pitched, stream-ordered pool reserve and VMM
// handles, each counted at its size rounded up to 512 bytes (VMM handles at their size). Managed
// and host memory excluded.
uint64_t fakecuda_live_bytes(int device);
// Highest live_bytes since start or the last fakecuda_reset_counters().
uint64_t fakecuda_peak_bytes(int device);
// Number of driver allocations behind live_bytes (pool blocks count once each, free or in use).
uint64_t fakecuda_live_allocations(int device);
// Device bytes / allocations freed by context teardown (cuCtxDestroy, primary reset or last
// release).
uint64_t fakecuda_teardown_freed_bytes(int device);
uint64_t fakecuda_teardown_freed_allocations(int device);
// Invalid frees, releases and destroys (unknown or already freed pointer or handle).
uint64_t fakecuda_errors(void);
// Stream captures invalidated by an unsafe call or an implicit dependency.
int fakecuda_capture_invalidations(void);
// Zeroes call counts, errors, invalidations and teardown counters; peak restarts at the current
// live bytes.
void fakecuda_reset_counters(void);
// Capacity of a device in bytes (FAKECUDA_CAPACITY); allocations beyond it fail with
// CUDA_ERROR_OUT_OF_MEMORY.
void fakecuda_set_capacity(int device, uint64_t bytes);
// Bytes of a device's capacity held by other processes (FAKECUDA_OTHER_PROCESSES_BYTES):
// cuMemGetInfo's free and the room for allocations shrink by them; the total and live_bytes do not
// change.
void fakecuda_set_other_processes_bytes(int device, uint64_t bytes);
// Simulated cost of each cuMemAlloc/cuMemAllocPitch/cuMemFree call (FAKECUDA_ALLOC_DELAY_US).
void fakecuda_set_alloc_delay_us(uint64_t microseconds);
// Simulated device time of each asynchronous operation, like a kernel's duration
// (FAKECUDA_OP_DELAY_US).
void fakecuda_set_op_delay_us(uint64_t microseconds);
// Bytes the device's default stream-ordered pool holds (in use + free) and of it, in use.
uint64_t fakecuda_pool_reserved_bytes(int device);
uint64_t fakecuda_pool_used_bytes(int device);

#ifdef __cplusplus
}
#endif
