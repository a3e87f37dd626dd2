// One function allocates for 100 callers and keeps every block: 100 sites whose stacks differ only
// below leaf_alloc(int), each holding 4 KiB at exit. The views that show one line per site list
// leaf_alloc(int) once, with the 100 summed; `report --stacks` lists the 100.
#include <cuda.h>

#include "tests/integration/programs/distinct_callers.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

void leaf_alloc(int caller) {
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, 4096));
  asm volatile("" ::"r"(caller));  // the call stays a call: no tail call, no inlining
}

int main() {
  use_primary_context();
  call_from_distinct_callers<100>();
  return 0;
}
