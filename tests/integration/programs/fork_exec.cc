// A process that uses the driver, forks, and has the child use the driver and exec another program.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  if (argc > 1) {  // the exec'd child: report whether the shim is still preloaded
    const char* preload = std::getenv("LD_PRELOAD");
    std::printf("exec'd child preload=%s\n", preload != nullptr ? "set" : "unset");
    return 0;
  }
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 1 << 20));
  std::fflush(stdout);

  const pid_t child = fork();
  CHECK_TRUE(child >= 0);
  if (child == 0) {
    CUdeviceptr child_ptr = 0;
    // The child's allocation goes through the (inert, fresh) shim state.
    if (cuMemAlloc(&child_ptr, 4096) == CUDA_SUCCESS) cuMemFree(child_ptr);
    execl("/proc/self/exe", argv[0], "child", static_cast<char*>(nullptr));
    _exit(3);
  }
  int status = 0;
  CHECK_TRUE(waitpid(child, &status, 0) == child);
  CHECK_CU(cuMemFree(ptr));
  std::printf("child status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
