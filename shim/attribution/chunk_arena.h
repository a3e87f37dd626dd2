// Runs of elements carved from fixed-size chunks that never move, so readers may keep pointers
// into them while a writer carves more.
#pragma once

#include <cstddef>
#include <vector>

#include "shim/support/room_for_one_more.h"

namespace vramshim::attribution {

// One writer at a time (the caller serializes allocate); what a reader sees of a run is published
// by the caller (e.g. through AppendOnlyArray). Chunks are freed with the arena.
template <typename T, size_t kChunk>
class ChunkArena {
 public:
  ChunkArena() = default;
  ChunkArena(const ChunkArena&) = delete;
  ChunkArena& operator=(const ChunkArena&) = delete;
  ~ChunkArena() {
    for (T* chunk : chunks_) delete[] chunk;
  }

  // Room for `count` (at most kChunk) contiguous elements.
  T* allocate(size_t count) {
    if (chunks_.empty() || used_ + count > kChunk) {
      support::make_room_for_one_more(
          chunks_);  // so that push_back cannot throw and leak the chunk
      chunks_.push_back(new T[kChunk]);
      used_ = 0;
    }
    T* run = chunks_.back() + used_;
    used_ += count;
    return run;
  }

  size_t allocated_bytes() const { return chunks_.size() * kChunk * sizeof(T); }

 private:
  std::vector<T*> chunks_;
  size_t used_ = 0;
};

}  // namespace vramshim::attribution
