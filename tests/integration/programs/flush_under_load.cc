// Flushes, by socket and by signal, while four threads allocate, write, verify and free: nothing
// breaks (a flush that freed a live block would show as a corrupted pattern or a driver error), and
// once the threads are done a final flush leaves the driver holding exactly the live blocks'
// segments.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

namespace {

constexpr int kThreads = 4;
std::atomic<int> g_corrupted{0};

void churn(CUcontext context, unsigned seed, int rounds, std::vector<CUdeviceptr>* kept) {
  CHECK_CU(cuCtxSetCurrent(context));
  std::mt19937 random(seed);
  for (int round = 0; round < rounds; ++round) {
    const size_t size = 512 * (1 + random() % 4096);  // up to 2 MiB
    const unsigned char pattern = static_cast<unsigned char>(random());
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, size));
    CHECK_CU(cuMemsetD8(ptr, pattern, size));
    usleep(random() % 200);
    if (bytes_other_than(ptr, size, pattern) > 0) ++g_corrupted;
    if (round % 50 == 0) {
      kept->push_back(ptr);  // a few blocks stay live to the end
    } else {
      CHECK_CU(cuMemFree(ptr));
    }
  }
}

}  // namespace

int main() {
  const CUcontext context = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  std::vector<std::vector<CUdeviceptr>> kept(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back(churn, context, 100 + i, 600, &kept[i]);
  }
  int socket_flushes = 0;
  for (int i = 0; i < 10; ++i) {
    usleep(20 * 1000);
    if (json_number(control_request("flush"), "released_bytes") >= 0) ++socket_flushes;
    kill(getpid(), SIGUSR1);  // the flush signal
  }
  for (std::thread& t : threads) t.join();

  const std::string stats_before = control_request("stats");
  const std::string flushed = control_request("flush");
  const std::string stats_after = control_request("stats");
  uint64_t live_blocks = 0;
  for (const auto& blocks : kept) live_blocks += blocks.size();
  std::printf(
      "corrupted=%d errors=%llu socket_flushes=%d live_blocks=%llu released=%lld "
      "reserved_before=%lld reserved_after=%lld in_use_after=%lld driver_live=%llu\n",
      g_corrupted.load(), static_cast<unsigned long long>(fake.errors()), socket_flushes,
      static_cast<unsigned long long>(live_blocks), json_number(flushed, "released_bytes"),
      json_number(stats_before, "reserved_bytes"), json_number(stats_after, "reserved_bytes"),
      json_number(stats_after, "in_use_bytes"),
      static_cast<unsigned long long>(fake.live_bytes(0)));

  for (const auto& blocks : kept) {
    for (CUdeviceptr ptr : blocks) CHECK_CU(cuMemFree(ptr));
  }
  const std::string emptied = control_request("flush");
  std::printf("after freeing all: driver_live=%llu\n",
              static_cast<unsigned long long>(fake.live_bytes(0)));
  return g_corrupted.load() == 0 ? 0 : 1;
}
