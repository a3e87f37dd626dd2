// A program whose main thread ends with pthread_exit() while another thread of its own still runs:
// the process ends when that thread returns, with status 0 and its exit handlers, as glibc ends a
// process whose last thread ends.
#include <cuda.h>
#include <pthread.h>
#include <unistd.h>

#include "tests/integration/programs/primary_context.h"

namespace {

void* last_thread(void*) {
  usleep(300000);
  return nullptr;
}

}  // namespace

int main() {
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));  // the shim's threads run from here on
  pthread_t thread;
  CHECK_TRUE(pthread_create(&thread, nullptr, &last_thread, nullptr) == 0);
  pthread_exit(nullptr);
}
