#include "shim/intercept/internal_failure.h"

#include <atomic>

#include "shim/control/log.h"

namespace vramshim::intercept {
namespace {

std::atomic<bool> g_failed{false};

}  // namespace

void note_internal_failure(const char* where, const char* what) noexcept {
  if (g_failed.exchange(true, std::memory_order_acq_rel)) return;
  control::log(control::LogLevel::kError,
               "internal failure in %s (%s); the pool stops: new allocations go to the driver, and "
               "the memory it holds stays held until the process ends",
               where, what);
}

bool internal_failure_seen() noexcept { return g_failed.load(std::memory_order_relaxed); }

CUresult failed_hook(const char* name, const char* what) noexcept {
  note_internal_failure(name, what);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

}  // namespace vramshim::intercept
