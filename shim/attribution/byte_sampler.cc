#include "shim/attribution/byte_sampler.h"

#include <time.h>

#include <algorithm>
#include <cmath>

namespace vramshim::attribution {
namespace {

struct ThreadCountdown {
  uint64_t instance;  // 0: not yet seeded for any sampler
  int64_t bytes_left;
  uint64_t rng_state;
};

thread_local ThreadCountdown thread_countdown;

std::atomic<uint64_t> next_instance{1};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t clock_seed() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace

ByteSampler::ByteSampler(uint64_t mean_bytes, uint64_t seed)
    : mean_bytes_(std::max<uint64_t>(mean_bytes, 1)),
      seed_(seed),
      instance_(next_instance.fetch_add(1, std::memory_order_relaxed)) {}

int64_t ByteSampler::draw_countdown(uint64_t& rng_state) const {
  // u uniform in (0, 1]; -ln(u) is exponential with mean 1.
  const double u = static_cast<double>((splitmix64(rng_state) >> 11) + 1) * 0x1.0p-53;
  const double bytes = -std::log(u) * static_cast<double>(mean_bytes_);
  return bytes >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

bool ByteSampler::should_sample(uint64_t size) {
  ThreadCountdown& countdown = thread_countdown;
  if (countdown.instance != instance_) {
    const uint64_t ordinal = threads_seeded_.fetch_add(1, std::memory_order_relaxed);
    countdown.instance = instance_;
    countdown.rng_state = (seed_ != 0 ? seed_ : clock_seed()) + ordinal * 0x632be59bd9b4e019ULL;
    countdown.bytes_left = draw_countdown(countdown.rng_state);
  }
  if (size == 0) return false;
  const auto step = static_cast<int64_t>(std::min<uint64_t>(size, INT64_MAX));
  if (countdown.bytes_left > step) {
    countdown.bytes_left -= step;
    return false;
  }
  countdown.bytes_left = draw_countdown(countdown.rng_state);
  return true;
}

AllocationWeight ByteSampler::weight_of(uint64_t size) const {
  const double p = -std::expm1(-static_cast<double>(size) / static_cast<double>(mean_bytes_));
  if (!(p > 0.0)) return {size, kCountUnit};
  return {static_cast<uint64_t>(std::llround(static_cast<double>(size) / p)),
          static_cast<uint64_t>(std::llround(static_cast<double>(kCountUnit) / p))};
}

}  // namespace vramshim::attribution
