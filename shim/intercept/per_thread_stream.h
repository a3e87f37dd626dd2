// Whether the process has put work on a per-thread default stream. The shim cannot record events on
// other threads' per-thread streams, so once this is set the pool fences with a context synchronize.
#pragma once

#include <atomic>

namespace vramshim::intercept {

extern std::atomic<bool> g_per_thread_stream_used;

inline void note_per_thread_stream_used() {
  if (!g_per_thread_stream_used.load(std::memory_order_relaxed)) {
    g_per_thread_stream_used.store(true, std::memory_order_relaxed);
  }
}
inline bool per_thread_stream_used() {
  return g_per_thread_stream_used.load(std::memory_order_relaxed);
}

}  // namespace vramshim::intercept
