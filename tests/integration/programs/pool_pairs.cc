// A replayed training-step workload, then 10,000 allocate/free pairs of one size: how often the
// pool had to ask the driver, and how much it held, as the simulated driver counted it.
#include <cuda.h>

#include <unordered_map>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/unit/pool/training_workload.h"

int main() {
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();

  const uint64_t before = fake.calls("cuMemAlloc_v2");
  const auto ops = vramshim::pool::testing::training_workload(/*seed=*/7, /*steps=*/100);
  uint64_t peak_driver_bytes = 0;
  std::unordered_map<uint32_t, CUdeviceptr> live;
  for (const auto& op : ops) {
    if (op.allocate) {
      CUdeviceptr ptr = 0;
      CHECK_CU(cuMemAlloc(&ptr, op.bytes));
      live[op.id] = ptr;
      const uint64_t driver_bytes = fake.live_bytes(0);
      if (driver_bytes > peak_driver_bytes) peak_driver_bytes = driver_bytes;
    } else {
      CHECK_CU(cuMemFree(live.at(op.id)));
      live.erase(op.id);
    }
  }
  const uint64_t after_replay = fake.calls("cuMemAlloc_v2");
  std::printf("replay requests=%zu driver_allocs=%llu peak_driver_bytes=%llu peak_in_use=%llu\n",
              vramshim::pool::testing::count_allocations(ops),
              static_cast<unsigned long long>(fake.calls("cuMemAlloc_v2") - before),
              static_cast<unsigned long long>(peak_driver_bytes),
              static_cast<unsigned long long>(vramshim::pool::testing::peak_live_bytes(ops, 512)));
  // A context of its own, so its pool starts empty.
  CUcontext fresh;
  CHECK_CU(cuCtxCreate(&fresh, nullptr, 0, 0));
  for (int i = 0; i < 10000; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 3 << 20));
    CHECK_CU(cuMemFree(ptr));
  }
  std::printf("pairs driver_allocs=%llu\n",
              static_cast<unsigned long long>(fake.calls("cuMemAlloc_v2") - after_replay));
  CHECK_CU(cuCtxDestroy(fresh));
  return 0;
}
