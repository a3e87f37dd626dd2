// A child forked after the program used CUDA (a worker) is ended by SIGUSR1 and SIGUSR2, as
// without the shim: the shim's handlers for its flush and report signals must not outlive it in
// a child, where they do nothing.
// Prints how each child ended.
#include <cuda.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>

#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 1 << 20));
  for (const int signal_number : {SIGUSR1, SIGUSR2}) {
    const pid_t child = fork();
    if (child == 0) {
      pause();
      _exit(0);
    }
    usleep(100000);
    kill(child, signal_number);
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("signal %d: ended_by_signal=%d\n", signal_number,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  CHECK_CU(cuMemFree(ptr));
  return 0;
}
