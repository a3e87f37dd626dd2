#include "shim/intercept/unhooked_stream_source.h"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace vramshim::intercept {
namespace {

// The first description, copied (the caller's string may not last); published by g_seen.
char g_first[kUnhookedStreamSourceMax];
std::atomic<bool> g_claimed{false};
std::atomic<bool> g_seen{false};
std::atomic<UnhookedStreamSourceListener> g_listener{nullptr};

bool starts_with(const char* name, const char* prefix) {
  return std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

bool creates_streams(const char* name) {
  return name != nullptr &&
         (starts_with(name, "cuStreamCreate") || starts_with(name, "cuGreenCtxStreamCreate"));
}

void note_unhooked_stream_source(const char* name) {
  char description[kUnhookedStreamSourceMax];
  std::snprintf(description, sizeof(description),
                "the program got %.64s, which creates streams the shim cannot see", name);
  note_unseen_streams(description);
}

void note_unseen_streams(const char* description) {
  if (!g_claimed.exchange(true, std::memory_order_acq_rel)) {
    std::strncpy(g_first, description, sizeof(g_first) - 1);
    g_seen.store(true, std::memory_order_release);
  }
  if (UnhookedStreamSourceListener listener = g_listener.load(std::memory_order_acquire)) {
    listener(description);
  }
}

const char* first_unhooked_stream_source() {
  return g_seen.load(std::memory_order_acquire) ? g_first : nullptr;
}

void set_unhooked_stream_source_listener(UnhookedStreamSourceListener listener) {
  g_listener.store(listener, std::memory_order_release);
}

}  // namespace vramshim::intercept
