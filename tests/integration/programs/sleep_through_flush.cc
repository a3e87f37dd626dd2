// Sleeps 1.5 s in nanosleep on the main thread while another thread flushes the pool, over the
// control socket ("socket") or with the flush signal ("signal"); prints whether the sleep was cut
// short and whether the flush happened. The socket interrupts nothing; a handled signal
// interrupts the sleep of whichever thread it is delivered to.
#include <cuda.h>
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  const bool by_signal = argc > 1 && std::strcmp(argv[1], "signal") == 0;
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  CHECK_CU(cuMemFree(ptr));
  // Only the main thread may take the signal, as in a program whose other threads block it.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  std::thread flusher([&] {
    pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
    usleep(200 * 1000);
    if (by_signal) {
      kill(getpid(), SIGUSR1);
    } else {
      control_request("flush");
    }
  });
  timespec request{1, 500 * 1000 * 1000};
  timespec left{};
  const int result = nanosleep(&request, &left);
  const bool interrupted = result != 0 && errno == EINTR;
  flusher.join();
  usleep(100 * 1000);  // the signal's flush runs on the shim's thread
  std::printf("interrupted=%d driver_live=%llu\n", interrupted ? 1 : 0,
              static_cast<unsigned long long>(fake.live_bytes(0)));
  return 0;
}
