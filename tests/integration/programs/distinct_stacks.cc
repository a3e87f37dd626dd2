// Allocations from 2,000 distinct call stacks (2,000 generated callers of one function), each block
// kept, between two from one stack (first_stack): the stack table's budget (VRAMSHIM_STACK_TABLE)
// is reached on the way when it is small, after first_stack's stack was interned.
#include <cuda.h>

#include "tests/integration/programs/distinct_callers.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

void leaf_alloc(int caller) {
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, 4096));
  asm volatile("" ::"r"(caller));  // the call stays a call: no tail call, no inlining
}

__attribute__((noinline)) void first_stack() {
  leaf_alloc(-1);
  asm volatile("");
}

int main() {
  use_primary_context();
  for (int round = 0; round < 2; ++round) {
    first_stack();  // the same call site both times: the same stack
    if (round == 0) call_from_distinct_callers<2000>();
  }
  return 0;
}
