// A caller compiled without unwind tables (without_unwind_info.c).
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Returns allocate(ptr, bytes), called from a frame without unwind information.
int call_without_unwind_info(int (*allocate)(unsigned long long*, size_t), unsigned long long* ptr,
                             size_t bytes);

#ifdef __cplusplus
}
#endif
