// The exported test-control functions declared in fakecuda_control.h.
#include "tests/fakecuda/fakecuda_control.h"

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"
#include "tests/fakecuda/simulated_delay.h"

namespace vramshim::fakecuda {
namespace {

// Reads one field of a device under the lock; 0 for a device that does not exist.
template <typename Field>
uint64_t deviceField(int device, Field field) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (device < 0 || device >= static_cast<int>(d.devices.size())) return 0;
  return field(d.devices[device]);
}

}  // namespace
}  // namespace vramshim::fakecuda

using namespace vramshim::fakecuda;

extern "C" {

uint64_t fakecuda_calls(const char* exported_symbol_name) { return callsOf(exported_symbol_name); }

uint64_t fakecuda_live_bytes(int device) {
  return deviceField(device, [](const Device& d) { return d.live_bytes; });
}

uint64_t fakecuda_peak_bytes(int device) {
  return deviceField(device, [](const Device& d) { return d.peak_bytes; });
}

uint64_t fakecuda_live_allocations(int device) {
  return deviceField(device, [](const Device& d) { return d.live_allocations; });
}

uint64_t fakecuda_teardown_freed_bytes(int device) {
  return deviceField(device, [](const Device& d) { return d.teardown_freed_bytes; });
}

uint64_t fakecuda_teardown_freed_allocations(int device) {
  return deviceField(device, [](const Device& d) { return d.teardown_freed_allocations; });
}

uint64_t fakecuda_pool_reserved_bytes(int device) {
  return deviceField(device, [](const Device& d) { return d.pool->reserved; });
}

uint64_t fakecuda_pool_used_bytes(int device) {
  return deviceField(device, [](const Device& d) { return d.pool->used; });
}

uint64_t fakecuda_errors(void) { return driver().errors.load(); }

int fakecuda_capture_invalidations(void) { return driver().capture_invalidations.load(); }

void fakecuda_reset_counters(void) {
  resetCalls();
  Driver& d = driver();
  d.errors.store(0);
  d.capture_invalidations.store(0);
  std::lock_guard<std::mutex> lock(d.mu);
  for (Device& dev : d.devices) {
    dev.peak_bytes = dev.live_bytes;
    dev.teardown_freed_bytes = 0;
    dev.teardown_freed_allocations = 0;
  }
}

void fakecuda_set_capacity(int device, uint64_t bytes) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (device >= 0 && device < static_cast<int>(d.devices.size()))
    d.devices[device].capacity = bytes;
}

void fakecuda_set_other_processes_bytes(int device, uint64_t bytes) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (device >= 0 && device < static_cast<int>(d.devices.size()))
    d.devices[device].other_processes_bytes = bytes;
}

void fakecuda_set_alloc_delay_us(uint64_t microseconds) { g_alloc_delay_us.store(microseconds); }

void fakecuda_set_op_delay_us(uint64_t microseconds) { g_op_delay_us.store(microseconds); }

}  // extern "C"
