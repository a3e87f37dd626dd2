// Deletes its own executable (as `make install` replacing it would), then leaks 1 MiB in
// leak_after_reinstall.
#include <cuda.h>
#include <unistd.h>

#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

extern "C" __attribute__((noinline)) void leak_after_reinstall() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, 1 << 20));
}

int main() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  CHECK_TRUE(length > 0);
  self[length] = '\0';
  CHECK_TRUE(unlink(self) == 0);
  use_primary_context();
  leak_after_reinstall();
  return 0;
}
