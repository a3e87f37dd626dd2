// The fourth door, which the shim cannot guard: a library dlopen'ed with RTLD_DEEPBIND binds its
// references to its own dependencies first. When those include the driver (or the C library's
// dlsym, through which a statically linked CUDA runtime finds the driver), its driver calls bypass
// every hook, and the streams it creates are unseen. Such a load is noticed here, before glibc's
// dlopen runs (see dlopen_trampoline.S), and reported as an unhooked stream source: the pools then
// fence with context synchronizes, which hold without seeing the streams. The driver's own loads
// are its business.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "shim/intercept/driver_symbol.h"
#include "shim/intercept/own_definition.h"
#include "shim/intercept/passthrough.h"
#include "shim/intercept/real_dlsym.h"
#include "shim/intercept/unhooked_stream_source.h"

using namespace vramshim::intercept;

namespace {

using DlopenFn = void* (*)(const char* file, int mode);

DlopenFn glibc_dlopen() {
  // No function-local static (see real_dlsym.cc); racing threads resolve the same pointer.
  static std::atomic<DlopenFn> resolved{nullptr};
  DlopenFn fn = resolved.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  fn = reinterpret_cast<DlopenFn>(glibc_function("dlopen"));
  resolved.store(fn, std::memory_order_release);
  return fn;
}

bool called_by_the_driver(const void* caller) {
  void* driver_function = nullptr;
  return find_driver_symbol("cuInit", &driver_function) == DriverLookup::kFound &&
         same_object(caller, driver_function);
}

}  // namespace

// Returns glibc's dlopen, which the trampoline jumps to with the caller's arguments.
extern "C" __attribute__((visibility("hidden"))) void* vramshim_dlopen_notice(const char* file,
                                                                              int mode,
                                                                              const void* caller) {
  if ((mode & RTLD_DEEPBIND) != 0 && file != nullptr && !shim_disabled() &&
      !called_by_the_driver(caller)) {
    const char* base = std::strrchr(file, '/');
    char door[kUnhookedStreamSourceMax];
    std::snprintf(door, sizeof(door),
                  "%.120s was dlopen'ed with RTLD_DEEPBIND: the streams it creates and the memory "
                  "it allocates bypass the shim",
                  base != nullptr ? base + 1 : file);
    note_unseen_streams(door);
  }
  return reinterpret_cast<void*>(glibc_dlopen());
}
