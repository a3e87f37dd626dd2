// Byte-based Poisson sampling of allocations, as tcmalloc and jemalloc do it.
#pragma once

#include <atomic>
#include <cstdint>

namespace vramshim::attribution {

// Allocation counts are kept in fixed point so that sampled (fractional) counts add and subtract
// exactly: one allocation is kCountUnit units.
inline constexpr uint64_t kCountUnit = uint64_t{1} << 16;

// What one tracked allocation adds to its site's figures: itself, or with sampling its estimate.
struct AllocationWeight {
  uint64_t bytes;
  uint64_t count_units;
};

// Each thread counts down a number of bytes drawn from an exponential distribution with mean
// `mean_bytes`; the allocation that crosses zero is sampled and a new countdown is drawn. An
// allocation of s bytes is thus sampled with probability p = 1 - exp(-s / mean_bytes),
// independently of the others. The countdown lives in thread-local storage: no lock, no allocation.
class ByteSampler {
 public:
  // seed 0 seeds each thread from the clock; any other value makes the draws reproducible.
  ByteSampler(uint64_t mean_bytes, uint64_t seed);

  bool should_sample(uint64_t size);

  // The unbiased estimate a sampled allocation of `size` bytes stands for: s/p bytes, 1/p
  // allocations.
  AllocationWeight weight_of(uint64_t size) const;

  uint64_t mean_bytes() const { return mean_bytes_; }

 private:
  int64_t draw_countdown(uint64_t& rng_state) const;

  uint64_t mean_bytes_;
  uint64_t seed_;
  uint64_t instance_;  // tells this sampler's thread-local countdowns from another instance's
  std::atomic<uint64_t> threads_seeded_{0};
};

}  // namespace vramshim::attribution
