// Whether the process has put work on a per-thread default stream. The shim cannot record events on
// other threads' per-thread streams, so once this is set the pools fence with a context
// synchronize.
#pragma once

#include <atomic>

namespace vramshim::intercept {

extern std::atomic<bool> g_per_thread_stream_used;

// Called once, on the first use, so the runtime can tell the pools that already exist.
using PerThreadStreamListener = void (*)();
void set_per_thread_stream_listener(PerThreadStreamListener listener);
void note_first_per_thread_stream_use();

inline void note_per_thread_stream_used() {
  if (!g_per_thread_stream_used.load(std::memory_order_relaxed)) note_first_per_thread_stream_use();
}
inline bool per_thread_stream_used() {
  return g_per_thread_stream_used.load(std::memory_order_relaxed);
}

}  // namespace vramshim::intercept
