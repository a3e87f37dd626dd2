// cuMemAlloc and cuMemFree while a stream capture runs get the driver's answer whether or not the
// pool could serve them: refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated)
// from a thread the capture's mode forbids them, served from one it allows. The pool is warm, so
// every request could be a pool hit. Prints, per case, the allocation's and the free's results
// and whether the capture ended valid, and `damaged` (1: a block whose free was refused lost its
// data). With "pairs": a thread in the relaxed mode makes 20 allocation and free pairs during a
// global capture; prints how many cuMemAlloc_v2 calls reached the driver meanwhile.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

namespace {

CUcontext g_context = nullptr;
CUdeviceptr g_held = 0;  // a live block each case tries to free
int g_damaged = 0;

// What `call` returns on a thread of its own in `mode` (its capture interaction mode).
template <typename Call>
CUresult on_other_thread(CUstreamCaptureMode mode, Call&& call) {
  CUresult result = CUDA_SUCCESS;
  std::thread thread([&] {
    CHECK_CU(cuCtxSetCurrent(g_context));
    CUstreamCaptureMode exchanged = mode;
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&exchanged));
    result = call();
  });
  thread.join();
  return result;
}

void fill_held(unsigned char value) {
  CHECK_CU(cuMemAlloc(&g_held, 4096));
  CHECK_CU(cuMemsetD8(g_held, value, 4096));
}

void check_held(unsigned char value) {
  unsigned char bytes[4096];
  CHECK_CU(cuMemcpyDtoH(bytes, g_held, sizeof(bytes)));
  for (unsigned char byte : bytes) {
    if (byte != value) {
      g_damaged = 1;
      break;
    }
  }
}

// One case: a capture of `capture_mode` on this thread; the allocation and the free made here
// (`other` false) or on another thread in `thread_mode`.
void run_case(const char* name, CUstreamCaptureMode capture_mode, bool other,
              CUstreamCaptureMode thread_mode) {
  fill_held(0x5a);
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamBeginCapture(stream, capture_mode));
  CUdeviceptr ptr = 0;
  auto allocate = [&] { return cuMemAlloc(&ptr, 4096); };
  auto free_held = [&] { return cuMemFree(g_held); };
  const CUresult allocated = other ? on_other_thread(thread_mode, allocate) : allocate();
  const CUresult freed = other ? on_other_thread(thread_mode, free_held) : free_held();
  CUgraph graph = nullptr;
  const CUresult ended = cuStreamEndCapture(stream, &graph);
  CHECK_CU(cuStreamDestroy(stream));
  std::printf("%s: alloc=%d free=%d end=%d\n", name, static_cast<int>(allocated),
              static_cast<int>(freed), static_cast<int>(ended));
  if (allocated == CUDA_SUCCESS) CHECK_CU(cuMemFree(ptr));
  if (freed != CUDA_SUCCESS) {
    check_held(0x5a);  // still the program's
    CHECK_CU(cuMemFree(g_held));
  }
}

// Pool hits during a capture that allows them: the driver is asked once, not per call (each
// asking frees, which waits for the device's work).
void run_pairs() {
  const FakeDriverState fake = fake_driver_state();
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  const uint64_t before = fake.calls("cuMemAlloc_v2");
  const CUresult result = on_other_thread(CU_STREAM_CAPTURE_MODE_RELAXED, [] {
    for (int i = 0; i < 20; ++i) {
      CUdeviceptr ptr = 0;
      CHECK_CU(cuMemAlloc(&ptr, 4096));
      CHECK_CU(cuMemFree(ptr));
    }
    return CUDA_SUCCESS;
  });
  const uint64_t during = fake.calls("cuMemAlloc_v2") - before;
  CUgraph graph = nullptr;
  CHECK_CU(cuStreamEndCapture(stream, &graph));
  CHECK_CU(cuStreamDestroy(stream));
  std::printf("pairs=%d driver_allocations=%llu\n", static_cast<int>(result),
              static_cast<unsigned long long>(during));
}

}  // namespace

int main(int argc, char** argv) {
  g_context = use_primary_context();
  // Warm: blocks of 4096 bytes freed and made ready, so each request below is a pool hit.
  CUdeviceptr warm[16];
  for (CUdeviceptr& ptr : warm) CHECK_CU(cuMemAlloc(&ptr, 4096));
  for (CUdeviceptr ptr : warm) CHECK_CU(cuMemFree(ptr));
  CHECK_CU(cuCtxSynchronize());
  if (argc > 1 && std::strcmp(argv[1], "pairs") == 0) {
    run_pairs();
    return 0;
  }
  run_case("global_same_thread", CU_STREAM_CAPTURE_MODE_GLOBAL, false,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
  run_case("global_other_thread", CU_STREAM_CAPTURE_MODE_GLOBAL, true,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
  run_case("global_other_thread_relaxed", CU_STREAM_CAPTURE_MODE_GLOBAL, true,
           CU_STREAM_CAPTURE_MODE_RELAXED);
  run_case("thread_local_same_thread", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, false,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
  run_case("thread_local_other_thread", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
  run_case("relaxed_same_thread", CU_STREAM_CAPTURE_MODE_RELAXED, false,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
  std::printf("damaged=%d\n", g_damaged);
  return 0;
}
