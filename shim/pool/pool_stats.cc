#include "shim/pool/pool_stats.h"

namespace vramshim::pool {

PoolStats& PoolStats::operator+=(const PoolStats& other) {
  in_use_bytes += other.in_use_bytes;
  cached_bytes += other.cached_bytes;
  reserved_bytes += other.reserved_bytes;
  peak_in_use_bytes += other.peak_in_use_bytes;
  peak_reserved_bytes += other.peak_reserved_bytes;
  driver_alloc_calls += other.driver_alloc_calls;
  driver_free_calls += other.driver_free_calls;
  pool_hits += other.pool_hits;
  pool_misses += other.pool_misses;
  fences_issued += other.fences_issued;
  synchronizations += other.synchronizations;
  released_by_flush_bytes += other.released_by_flush_bytes;
  released_by_oom_bytes += other.released_by_oom_bytes;
  released_by_idle_bytes += other.released_by_idle_bytes;
  if (other.limit_bytes) limit_bytes = other.limit_bytes;
  return *this;
}

}  // namespace vramshim::pool
