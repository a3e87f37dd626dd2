// A program whose main thread ends with pthread_exit() while another thread of its own still runs:
// the process ends when that thread returns, with its exit handlers, as glibc ends a process whose
// last thread ends. Its last exit handler raises SIGUSR1, whose handler ends the process with
// status 40: the handlers run with the program's signal mask.
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/integration/programs/primary_context.h"

namespace {

void end_with_40(int) { _exit(40); }

void raise_usr1() { raise(SIGUSR1); }

void* last_thread(void*) {
  usleep(300000);
  return nullptr;
}

}  // namespace

int main() {
  signal(SIGUSR1, &end_with_40);
  std::atexit(&raise_usr1);  // before the shim starts: it runs after the shim's exit report
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));  // the shim's threads run from here on
  pthread_t thread;
  CHECK_TRUE(pthread_create(&thread, nullptr, &last_thread, nullptr) == 0);
  pthread_exit(nullptr);
}
