// The simulated driver's test-control functions, found at run time (programs may load the driver
// with dlopen, so they do not link against them).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

struct FakeDriverState {
  uint64_t (*live_bytes)(int device);
  uint64_t (*live_allocations)(int device);
  uint64_t (*errors)();
  int (*capture_invalidations)();
  uint64_t (*calls)(const char* symbol);
};

inline FakeDriverState fake_driver_state() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) {
    std::fprintf(stderr, "the simulated driver is not loaded\n");
    std::exit(2);
  }
  FakeDriverState state{};
  state.live_bytes = reinterpret_cast<uint64_t (*)(int)>(dlsym(driver, "fakecuda_live_bytes"));
  state.live_allocations =
      reinterpret_cast<uint64_t (*)(int)>(dlsym(driver, "fakecuda_live_allocations"));
  state.errors = reinterpret_cast<uint64_t (*)()>(dlsym(driver, "fakecuda_errors"));
  state.capture_invalidations =
      reinterpret_cast<int (*)()>(dlsym(driver, "fakecuda_capture_invalidations"));
  state.calls = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(driver, "fakecuda_calls"));
  if (!state.live_bytes || !state.live_allocations || !state.errors ||
      !state.capture_invalidations || !state.calls) {
    std::fprintf(stderr, "not the simulated driver\n");
    std::exit(2);
  }
  return state;
}

// One line per symbol, the simulated driver's own counters, parsed by the test driver: "fake
// NAME=N". They prove a call reached the real function behind a hook.
inline void print_fake_calls(std::initializer_list<const char*> symbols) {
  const FakeDriverState fake = fake_driver_state();
  for (const char* symbol : symbols) {
    std::printf("fake %s=%llu\n", symbol, static_cast<unsigned long long>(fake.calls(symbol)));
  }
  std::fflush(stdout);
}
