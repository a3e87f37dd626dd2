// Shared by the small programs that integration tests run under the shim: checked driver calls.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

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
