// Starts the shim (one allocation), then dies of a fatal signal: "segv" writes through a null
// pointer, "bus" raises SIGBUS, "abort" calls abort(). Under the shim it must die exactly as it
// would without it.
#include <cuda.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>

#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "segv";
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  std::printf("allocated\n");
  std::fflush(stdout);
  if (std::strcmp(how, "bus") == 0) raise(SIGBUS);
  if (std::strcmp(how, "abort") == 0) std::abort();
  *static_cast<volatile int*>(nullptr) = 1;
  return 0;
}
