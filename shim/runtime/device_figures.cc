#include "shim/runtime/device_figures.h"

namespace vramshim::runtime {

DeviceFigureList device_figure_list(const pool::PoolStats& s) {
  return {
      {"in_use_bytes", s.in_use_bytes},
      {"cached_bytes", s.cached_bytes},
      {"reserved_bytes", s.reserved_bytes},
      {"peak_in_use_bytes", s.peak_in_use_bytes},
      {"peak_reserved_bytes", s.peak_reserved_bytes},
      {"driver_alloc_calls", s.driver_alloc_calls},
      {"driver_free_calls", s.driver_free_calls},
      {"pool_hits", s.pool_hits},
      {"pool_misses", s.pool_misses},
      {"fences_issued", s.fences_issued},
      {"synchronizations", s.synchronizations},
      {"released_by_flush_bytes", s.released_by_flush_bytes},
      {"released_by_oom_bytes", s.released_by_oom_bytes},
      {"released_by_idle_bytes", s.released_by_idle_bytes},
      {"limit_bytes", s.limit_bytes},
  };
}

}  // namespace vramshim::runtime
