// Allocations from 2,000 distinct call stacks (2,000 generated callers of one function), each block
// kept, between two from one stack (first_stack): the stack table's budget (VRAMSHIM_STACK_TABLE)
// is reached on the way when it is small, after first_stack's stack was interned.
#include <cuda.h>

#include <utility>

#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

constexpr int kCallers = 2000;

__attribute__((noinline)) void allocate_block(int caller) {
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, 4096));
  asm volatile("" ::"r"(caller));  // the call stays a call: no tail call, no inlining
}

template <int N>
__attribute__((noinline)) void distinct_caller() {
  allocate_block(N);
  asm volatile("");
}

template <int... N>
void call_each(std::integer_sequence<int, N...>) {
  (distinct_caller<N>(), ...);
}

__attribute__((noinline)) void first_stack() {
  allocate_block(-1);
  asm volatile("");
}

int main() {
  use_primary_context();
  for (int round = 0; round < 2; ++round) {
    first_stack();  // the same call site both times: the same stack
    if (round == 0) call_each(std::make_integer_sequence<int, kCallers>());
  }
  return 0;
}
