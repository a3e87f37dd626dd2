// The pool must never hand out memory that queued GPU work still writes. Each round queues a slow
// write to block A on a stream (a host function that sleeps, then an async memset), frees A,
// allocates the same size at once (the pool's first choice is A), writes a pattern synchronously,
// synchronizes and reads back: the pattern must be intact. Modes: legacy, nonblocking, streams
// (several non-blocking streams), threads (two threads, each with its own non-blocking stream),
// per_thread (the per-thread default stream, which the pool can only fence with a context
// synchronize).
#include <cuda.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/primary_context.h"

extern "C" {
// The per-thread-default-stream variants, as code compiled with --default-stream per-thread calls
// them.
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
}

namespace {

constexpr unsigned char kQueued = 0xAA;
constexpr unsigned char kPattern = 0x55;

void sleep_host(void* microseconds) {
  usleep(static_cast<useconds_t>(reinterpret_cast<uintptr_t>(microseconds)));
}

struct Queue {
  CUstream stream;
  bool per_thread;
};

int run_rounds(CUcontext context, const std::vector<Queue>& queues, int rounds, unsigned seed) {
  CHECK_CU(cuCtxSetCurrent(context));
  std::mt19937 random(seed);
  int corrupted = 0;
  std::vector<unsigned char> host;
  for (int round = 0; round < rounds; ++round) {
    const Queue& queue = queues[random() % queues.size()];
    const size_t size = 512 * (1 + random() % 512);  // 512 B .. 256 KiB
    const uintptr_t delay_us = random() % 1500;
    CUdeviceptr a = 0;
    CHECK_CU(cuMemAlloc(&a, size));
    if (queue.per_thread) {
      CHECK_CU(cuLaunchHostFunc_ptsz(queue.stream, sleep_host, reinterpret_cast<void*>(delay_us)));
      CHECK_CU(cuMemsetD8Async_ptsz(a, kQueued, size, queue.stream));
    } else {
      CHECK_CU(cuLaunchHostFunc(queue.stream, sleep_host, reinterpret_cast<void*>(delay_us)));
      CHECK_CU(cuMemsetD8Async(a, kQueued, size, queue.stream));
    }
    CHECK_CU(cuMemFree(a));
    CUdeviceptr b = 0;
    CHECK_CU(cuMemAlloc(&b, size));
    CHECK_CU(cuMemsetD8(b, kPattern, size));
    CHECK_CU(cuCtxSynchronize());
    host.assign(size, 0);
    CHECK_CU(cuMemcpyDtoH(host.data(), b, size));
    for (unsigned char byte : host) {
      if (byte != kPattern) {
        ++corrupted;
        break;
      }
    }
    CHECK_CU(cuMemFree(b));
  }
  return corrupted;
}

CUstream make_stream(unsigned flags) {
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, flags));
  return stream;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "nonblocking";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  CUcontext context = use_primary_context();
  int corrupted = 0;
  if (mode == "legacy") {
    corrupted = run_rounds(context, {{nullptr, false}}, rounds, 1);
  } else if (mode == "nonblocking") {
    corrupted = run_rounds(context, {{make_stream(CU_STREAM_NON_BLOCKING), false}}, rounds, 2);
  } else if (mode == "streams") {
    std::vector<Queue> queues;
    for (int i = 0; i < 3; ++i) queues.push_back({make_stream(CU_STREAM_NON_BLOCKING), false});
    queues.push_back({nullptr, false});
    corrupted = run_rounds(context, queues, rounds, 3);
  } else if (mode == "threads") {
    const CUstream first = make_stream(CU_STREAM_NON_BLOCKING);
    const CUstream second = make_stream(CU_STREAM_NON_BLOCKING);
    int corrupted_second = 0;
    std::thread other([&] {
      corrupted_second = run_rounds(context, {{second, false}}, rounds, 4);
    });
    corrupted = run_rounds(context, {{first, false}}, rounds, 5);
    other.join();
    corrupted += corrupted_second;
  } else if (mode == "per_thread") {
    corrupted = run_rounds(context, {{CU_STREAM_PER_THREAD, true}}, rounds, 6);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::printf("corrupted rounds=%d\n", corrupted);
  return corrupted == 0 ? 0 : 1;
}
