// Shared by the small programs that integration tests run under the shim: checked driver calls and
// the simulated driver's own counters (which prove a call reached the real function behind a hook).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#define CHECK_CU(call)                                                          \
  do {                                                                          \
    CUresult check_cu_result_ = (call);                                         \
    if (check_cu_result_ != CUDA_SUCCESS) {                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(check_cu_result_));                         \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

#define CHECK_TRUE(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

// Calls per exported symbol as counted by the simulated driver (tests/fakecuda).
inline uint64_t fake_calls(const char* symbol) {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return UINT64_MAX;
  auto fn = reinterpret_cast<uint64_t (*)(const char*)>(dlsym(driver, "fakecuda_calls"));
  return fn == nullptr ? UINT64_MAX : fn(symbol);
}

// One line per symbol, parsed by the test driver: "fake NAME=COUNT".
inline void print_fake_calls(std::initializer_list<const char*> symbols) {
  for (const char* symbol : symbols) {
    std::printf("fake %s=%llu\n", symbol, static_cast<unsigned long long>(fake_calls(symbol)));
  }
  std::fflush(stdout);
}
