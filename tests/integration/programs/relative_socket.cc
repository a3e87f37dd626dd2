// Runs with a relative VRAMSHIM_SOCKET: starts the shim (and its socket) in directory argv[1],
// then changes to argv[2], where a file of the same name is the program's own, and exits normally.
// The shim must remove its own socket and leave the program's file alone.
#include <cuda.h>
#include <unistd.h>

#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  CHECK_TRUE(argc > 2);
  CHECK_TRUE(chdir(argv[1]) == 0);
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));  // the runtime, and its socket, start here
  CHECK_TRUE(chdir(argv[2]) == 0);
  return 0;
}
