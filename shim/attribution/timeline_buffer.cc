#include "shim/attribution/timeline_buffer.h"

#include <algorithm>

namespace vramshim::attribution {

TimelineBuffer::TimelineBuffer(uint64_t base_interval_ms, size_t capacity)
    : base_interval_ms_(base_interval_ms), capacity_(std::max<size_t>(capacity, 2) & ~size_t{1}) {
  samples_.reserve(capacity_);
}

void TimelineBuffer::keep_larger(TimelineSample& kept, const TimelineSample& other) {
  if (other.in_use_bytes > kept.in_use_bytes) kept = other;
}

void TimelineBuffer::add_sample(double time, uint64_t in_use_bytes, uint64_t cached_bytes) {
  const TimelineSample sample{time, in_use_bytes, cached_bytes};
  std::lock_guard<std::mutex> lock(mutex_);
  if (!samples_.empty() && merged_into_last_ < samples_per_slot_) {
    keep_larger(samples_.back(), sample);
    ++merged_into_last_;
    return;
  }
  if (samples_.size() == capacity_) {
    for (size_t i = 0; i < capacity_ / 2; ++i) {
      TimelineSample merged = samples_[2 * i];
      keep_larger(merged, samples_[2 * i + 1]);
      samples_[i] = merged;
    }
    samples_.resize(capacity_ / 2);
    samples_per_slot_ *= 2;
  }
  samples_.push_back(sample);
  merged_into_last_ = 1;
}

Timeline TimelineBuffer::read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return Timeline{base_interval_ms_ * samples_per_slot_, samples_};
}

}  // namespace vramshim::attribution
