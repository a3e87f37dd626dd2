// In-use and cached bytes over time, in a bounded buffer that halves its resolution when full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace vramshim::attribution {

struct TimelineSample {
  double time;  // seconds since the Unix epoch
  uint64_t in_use_bytes;
  uint64_t cached_bytes;
};

struct Timeline {
  uint64_t interval_ms;  // spacing of the samples now: the base interval times 2^merges
  std::vector<TimelineSample> samples;  // oldest first
};

// The caller adds one sample per base interval (100 ms by default). Each stored sample stands for
// `interval / base` consecutive samples and keeps the one with the most bytes in use (its time and
// its cached bytes), so peaks survive merging. When the buffer is full, adjacent pairs are merged
// and the interval doubles: memory stays bounded however long the process runs.
class TimelineBuffer {
 public:
  TimelineBuffer(uint64_t base_interval_ms, size_t capacity);

  void add_sample(double time, uint64_t in_use_bytes, uint64_t cached_bytes);
  Timeline read() const;

 private:
  static void keep_larger(TimelineSample& kept, const TimelineSample& other);

  const uint64_t base_interval_ms_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<TimelineSample> samples_;
  uint64_t samples_per_slot_ = 1;  // base samples each stored sample stands for
  uint64_t merged_into_last_ = 0;  // base samples already in the newest stored sample
};

}  // namespace vramshim::attribution
