/* A caller without unwind tables, as JIT code or some hand-written assembly is: an unwinder walks
   past it by its frame pointer, testing that each address may be read. */
#include "tests/integration/programs/without_unwind_info.h"

int __attribute__((noinline)) call_without_unwind_info(int (*allocate)(unsigned long long*, size_t),
                                                       unsigned long long* ptr, size_t bytes) {
  volatile int result = allocate(ptr, bytes);
  return result;
}
