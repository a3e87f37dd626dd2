#include "shim/intercept/hook_table.h"

#include <dlfcn.h>

#include <cstring>

#include "shim/intercept/driver_symbol.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/support/per_thread_counters.h"

namespace vramshim::intercept {

std::atomic<void*> g_real_functions[kHookCount];

namespace {

using CallCounters = support::PerThreadCounters<kHookCount>;
CallCounters call_counters;
// Internal linkage: a TLS variable of global linkage would be listed in the shim's dynamic symbols.
thread_local CallCounters::Slot call_counter_slot;

struct HookEntry {
  const char* name;
  void* address;
};

// The shim links with -Bsymbolic-functions, so &::name is the shim's own function even when another
// object in the process defines the same name.
const HookEntry kHooks[kHookCount] = {
#define VRAMSHIM_CUSTOM_HOOK(name, params, args) {#name, reinterpret_cast<void*>(&::name)},
#include "shim/intercept/hooked_functions.def"
#undef VRAMSHIM_CUSTOM_HOOK
};

// A driver that was asked and does not define the symbol; never handed out as a function.
void* const kMissing = reinterpret_cast<void*>(uintptr_t{1});

void* stored_real(int index) {
  void* fn = g_real_functions[index].load(std::memory_order_acquire);
  return fn == kMissing ? nullptr : fn;
}

}  // namespace

void count_call(HookId id) { call_counters.add(call_counter_slot, static_cast<size_t>(id)); }

uint64_t call_count(HookId id) { return call_counters.sum(static_cast<size_t>(id)); }

bool is_hook_address(void* fn) {
  for (const HookEntry& entry : kHooks) {
    if (entry.address == fn) return true;
  }
  return false;
}

const char* hook_name(HookId id) { return kHooks[static_cast<int>(id)].name; }

void* hook_address(HookId id) { return kHooks[static_cast<int>(id)].address; }

HookId find_hook_by_name(const char* name) {
  if (name == nullptr || name[0] != 'c' || name[1] != 'u' || name[2] < 'A' || name[2] > 'Z') {
    return HookId::kNone;
  }
  for (int i = 0; i < kHookCount; ++i) {
    if (std::strcmp(kHooks[i].name, name) == 0) return static_cast<HookId>(i);
  }
  return HookId::kNone;
}

void note_real_function(HookId id, void* real_fn) {
  if (real_fn == nullptr || is_hook_address(real_fn)) return;
  std::atomic<void*>& slot = g_real_functions[static_cast<int>(id)];
  void* expected = slot.load(std::memory_order_acquire);
  while (expected == nullptr || expected == kMissing) {
    if (slot.compare_exchange_weak(expected, real_fn, std::memory_order_acq_rel)) return;
  }
}

void* resolve_real_function(HookId id) {
  const int index = static_cast<int>(id);
  void* fn = g_real_functions[index].load(std::memory_order_acquire);
  if (fn != nullptr) return fn == kMissing ? nullptr : fn;
  switch (find_driver_symbol(kHooks[index].name, &fn)) {
    case DriverLookup::kFound:
      note_real_function(id, fn);
      return stored_real(index);
    case DriverLookup::kMissing: {
      void* expected = nullptr;
      g_real_functions[index].compare_exchange_strong(expected, kMissing);
      return nullptr;
    }
    case DriverLookup::kNoDriver:
      break;
  }
  return nullptr;
}

HookId find_hook_by_real(void* real_fn) {
  if (real_fn == nullptr) return HookId::kNone;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kHookCount; ++i) {
      if (stored_real(i) == real_fn) return static_cast<HookId>(i);
    }
    // The driver's answer may be a function whose hook has not been resolved yet.
    Dl_info info;
    if (pass == 0 && dladdr(real_fn, &info) != 0 && info.dli_saddr == real_fn) {
      HookId named = find_hook_by_name(info.dli_sname);
      if (named != HookId::kNone && resolve_real_function(named) == real_fn) return named;
    }
    for (int i = 0; pass == 0 && i < kHookCount; ++i) resolve_real_function(static_cast<HookId>(i));
  }
  return HookId::kNone;
}

}  // namespace vramshim::intercept
