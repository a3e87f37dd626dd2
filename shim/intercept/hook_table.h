// Generated from hooked_functions.def: the identity of every hook (id, exported name, address), the
// real driver function behind it, and a call counter.
#pragma once

#include <atomic>
#include <cstdint>

#include "shim/intercept/cuda_api.h"

namespace vramshim::intercept {

enum class HookId : int {
#define VRAMSHIM_CUSTOM_HOOK(name, params, args) name,
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
  kNone,
};
constexpr int kHookCount = static_cast<int>(HookId::kNone);

const char* hook_name(HookId id);
// The shim's own exported function for this hook.
void* hook_address(HookId id);
// Whether `fn` is one of the shim's exported hooks.
bool is_hook_address(void* fn);
// Hook with exactly this exported name, or kNone. Only names of the form cu[A-Z]… can match.
HookId find_hook_by_name(const char* name);
// Hook whose real driver function is exactly `real_fn`, or kNone (cuGetProcAddress's identity
// mapping).
HookId find_hook_by_real(void* real_fn);

// The real driver function behind a hook, resolved lazily: first the next definition after the shim
// in the global scope, then the already-loaded libcuda.so.1 (covers a driver dlopen'ed with
// RTLD_LOCAL). Null when no driver defines it.
void* resolve_real_function(HookId id);
// Records the real function seen through a door (dlsym on a handle, cuGetProcAddress); first one
// wins.
void note_real_function(HookId id, void* real_fn);

extern std::atomic<void*> g_real_functions[kHookCount];

// Calls per hook, counted per thread: no cache line is shared by threads calling hooks at once.
void count_call(HookId id);
uint64_t call_count(HookId id);

inline void* real_function(HookId id) {
  void* fn = g_real_functions[static_cast<int>(id)].load(std::memory_order_acquire);
  return fn != nullptr ? fn : resolve_real_function(id);
}

}  // namespace vramshim::intercept
