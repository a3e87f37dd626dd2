// A growable array whose published elements never move, so readers index it without a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace vramshim::attribution {

// Segment s holds kFirstSegment << s elements; 32 segments cover more than 2^32 elements.
// One writer at a time (the caller serializes push_back); any number of concurrent readers of
// indices below size(), which publishes with release/acquire.
template <typename T, size_t kFirstSegment = 1024>
class AppendOnlyArray {
  static_assert((kFirstSegment & (kFirstSegment - 1)) == 0, "kFirstSegment is a power of two");

 public:
  AppendOnlyArray() = default;
  AppendOnlyArray(const AppendOnlyArray&) = delete;
  AppendOnlyArray& operator=(const AppendOnlyArray&) = delete;
  ~AppendOnlyArray() {
    for (auto& segment : segments_) delete[] segment.load(std::memory_order_relaxed);
  }

  size_t size() const { return size_.load(std::memory_order_acquire); }

  const T& operator[](size_t index) const {
    const Position at = position_of(index);
    return segments_[at.segment].load(std::memory_order_acquire)[at.offset];
  }

  // Appends and publishes `value`; returns its index.
  size_t push_back(const T& value) {
    const size_t index = size_.load(std::memory_order_relaxed);
    const Position at = position_of(index);
    T* segment = segments_[at.segment].load(std::memory_order_relaxed);
    if (segment == nullptr) {
      segment = new T[kFirstSegment << at.segment];
      segments_[at.segment].store(segment, std::memory_order_release);
      allocated_bytes_ += sizeof(T) * (kFirstSegment << at.segment);
    }
    segment[at.offset] = value;
    size_.store(index + 1, std::memory_order_release);
    return index;
  }

  // Bytes of the segments allocated so far (read under the writer's lock, or approximately).
  size_t allocated_bytes() const { return allocated_bytes_; }

 private:
  struct Position {
    unsigned segment;
    size_t offset;
  };

  static Position position_of(size_t index) {
    const uint64_t block = index / kFirstSegment + 1;  // segment s starts at block 2^s
    const unsigned segment = 63 - static_cast<unsigned>(__builtin_clzll(block));
    return {segment, index - kFirstSegment * ((uint64_t{1} << segment) - 1)};
  }

  std::atomic<T*> segments_[32] = {};
  std::atomic<size_t> size_{0};
  size_t allocated_bytes_ = 0;
};

}  // namespace vramshim::attribution
