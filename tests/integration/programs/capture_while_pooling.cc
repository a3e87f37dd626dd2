// A global-mode stream capture stays valid while another thread allocates and frees from the pool
// (in the relaxed capture mode of its own, as PyTorch's allocator does: in the default mode the
// driver refuses it), and while a flush is requested: the flush answers at once that a capture
// runs, and empties the pool once the capture ended.
// Argument "to_graph": the capture begins with cuStreamBeginCaptureToGraph.
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  const bool to_graph = argc > 1 && std::string(argv[1]) == "to_graph";
  const CUcontext context = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  // Warm the pool: 50 blocks of each size, freed, then readied by the next allocation (which
  // records the pool's marker on the legacy stream). During a global capture the pool may not
  // record anything on the legacy stream, so blocks freed then wait for the capture's end; the
  // allocations below are served from these ready blocks, with no driver call. (A request the
  // cache cannot serve goes to the driver, which refuses it during a global capture, as it would
  // without the shim.)
  const std::vector<size_t> sizes = {4096, 65536, size_t{1} << 20, size_t{3} << 20};
  constexpr int kPerSize = 50;
  std::vector<CUdeviceptr> warm;
  for (int i = 0; i < kPerSize; ++i) {
    for (size_t size : sizes) {
      CUdeviceptr ptr = 0;
      CHECK_CU(cuMemAlloc(&ptr, size));
      warm.push_back(ptr);
    }
  }
  for (CUdeviceptr ptr : warm) CHECK_CU(cuMemFree(ptr));
  CUstream capturing;
  CHECK_CU(cuStreamCreate(&capturing, CU_STREAM_DEFAULT));
  CUdeviceptr target = 0;
  CHECK_CU(cuMemAlloc(&target, 4096));
  CHECK_CU(cuCtxSynchronize());

  if (to_graph) {
    // Into a graph of the program's (the simulated driver keeps none: any handle serves).
    CHECK_CU(cuStreamBeginCaptureToGraph(capturing, nullptr, nullptr, nullptr, 0,
                                         CU_STREAM_CAPTURE_MODE_GLOBAL));
  } else {
    CHECK_CU(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL));
  }
  CHECK_CU(cuMemsetD8Async(target, 1, 4096, capturing));

  std::thread allocator([&] {
    CHECK_CU(cuCtxSetCurrent(context));
    CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&relaxed));
    std::vector<CUdeviceptr> held;
    for (size_t i = 0; i < sizes.size() * kPerSize / 2; ++i) {  // well within the warm blocks
      CUdeviceptr ptr = 0;
      CHECK_CU(cuMemAlloc(&ptr, sizes[i % sizes.size()]));
      held.push_back(ptr);
      if (held.size() == 8) {
        for (CUdeviceptr freed : held) CHECK_CU(cuMemFree(freed));
        held.clear();
      }
    }
    for (CUdeviceptr freed : held) CHECK_CU(cuMemFree(freed));
  });
  std::string flush_answer;
  std::thread flusher([&] { flush_answer = control_request("flush"); });
  allocator.join();
  flusher.join();  // answered while the capture runs
  const bool flush_deferred = flush_answer.find("\"capture\"") != std::string::npos;
  const uint64_t live_in_capture = fake.live_bytes(0);

  CUgraph graph = nullptr;
  const CUresult end = cuStreamEndCapture(capturing, &graph);
  // The flush is made at the control thread's first tick (0.1 s) after the capture's end.
  uint64_t live_after = fake.live_bytes(0);
  for (int waited_ms = 0; live_after >= live_in_capture && waited_ms < 10000; waited_ms += 10) {
    usleep(10 * 1000);
    live_after = fake.live_bytes(0);
  }
  std::printf(
      "end_capture=%d invalidations=%d flush_deferred=%d released_in_capture=%lld "
      "released_after=%llu\n",
      static_cast<int>(end), fake.capture_invalidations(), flush_deferred ? 1 : 0,
      json_number(flush_answer, "released_bytes"),
      static_cast<unsigned long long>(live_in_capture - std::min(live_in_capture, live_after)));
  return end == CUDA_SUCCESS ? 0 : 1;
}
