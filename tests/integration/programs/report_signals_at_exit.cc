// Report signals arrive while the program exits normally: a thread sends SIGUSR2 (the report
// signal) to the process in a loop until the process is gone. The last report written must be the
// exit report.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  std::thread([] {
    for (;;) {
      kill(getpid(), SIGUSR2);
      usleep(200);
    }
  }).detach();
  usleep(20 * 1000);  // some signal reports first
  return 0;
}
