// One function allocates for 100 callers and keeps every block: 100 sites whose stacks differ only
// below leaf_alloc(int), each holding 4 KiB at exit. The views that show one line per site list
// leaf_alloc(int) once, with the 100 summed; `report --stacks` lists the 100.
#include <cuda.h>

#include <utility>

#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

__attribute__((noinline)) void leaf_alloc(int caller) {
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, 4096));
  asm volatile("" ::"r"(caller));  // the call stays a call: no tail call, no inlining
}

template <int N>
__attribute__((noinline)) void caller() {
  leaf_alloc(N);
  asm volatile("");
}

template <int... N>
void call_each(std::integer_sequence<int, N...>) {
  (caller<N>(), ...);
}

int main() {
  use_primary_context();
  call_each(std::make_integer_sequence<int, 100>());
  return 0;
}
