// A C++ process (no Python) with cached pool memory asks for a deep flush of itself through the
// CLI: the answer must say the frameworks could not be flushed, and the pool must be flushed
// anyway.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 8 << 20));
  CHECK_CU(cuMemFree(ptr));  // cached in the pool
  const char* cli = std::getenv("VRAMSHIM_CLI");
  CHECK_TRUE(cli != nullptr);
  const std::string command =
      std::string(cli) + " flush --deep " + std::to_string(getpid()) + " 2>&1";
  std::fflush(stdout);
  const int status = std::system(command.c_str());
  std::printf("cli status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::printf("driver live after=%llu\n", static_cast<unsigned long long>(fake.live_bytes(0)));
  return 0;
}
