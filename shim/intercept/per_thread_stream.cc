#include "shim/intercept/per_thread_stream.h"

namespace vramshim::intercept {

std::atomic<bool> g_per_thread_stream_used{false};

namespace {
std::atomic<PerThreadStreamListener> g_listener{nullptr};
}  // namespace

void set_per_thread_stream_listener(PerThreadStreamListener listener) {
  g_listener.store(listener, std::memory_order_release);
}

void note_first_per_thread_stream_use() {
  if (g_per_thread_stream_used.exchange(true, std::memory_order_acq_rel)) return;
  if (PerThreadStreamListener listener = g_listener.load(std::memory_order_acquire)) listener();
}

}  // namespace vramshim::intercept
