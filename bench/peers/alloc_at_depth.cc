// N allocation pairs at a given call depth, timed: the workload bench/peers/run.sh runs under
// vramshim (cuMemAlloc_v2/cuMemFree_v2 against the simulated driver, the shim preloaded) and under
// heaptrack (malloc/free).
//   Usage: alloc_at_depth cuda|malloc DEPTH PAIRS
// DEPTH counts the frames on the stack at each allocation call: the allocating function and all
// its callers up to _start. Prints "frames=DEPTH ns_per_pair=NS cpu_ns_per_pair=NS": wall time and
// the thread's CPU time, after a warm-up of PAIRS / 10 pairs and at least 0.5 s.
#include <cuda.h>
#include <execinfo.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t kCudaBytes = 4096;
constexpr size_t kMallocBytes = 1024;
constexpr int kMaxFrames = 256;
constexpr uint64_t kWarmUpNs = 500000000;
constexpr long kWarmUpChunk = 1000;

enum class Allocator { kCuda, kMalloc };

struct Job {
  Allocator allocator;
  long pairs;
  int frames = 0;              // on the stack at each allocation call
  double ns_per_pair = 0;      // wall time
  double cpu_ns_per_pair = 0;  // the thread's CPU time
};

uint64_t clock_ns(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec);
}

uint64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(result));
  std::exit(1);
}

__attribute__((noinline)) void allocate_pairs(Allocator allocator, long pairs) {
  for (long i = 0; i < pairs; ++i) {
    if (allocator == Allocator::kCuda) {
      CUdeviceptr pointer = 0;
      check(cuMemAlloc(&pointer, kCudaBytes), "cuMemAlloc_v2");
      check(cuMemFree(pointer), "cuMemFree_v2");
    } else {
      void* pointer = std::malloc(kMallocBytes);
      asm volatile("" : : "r"(pointer) : "memory");  // keeps the pair from being optimized away
      std::free(pointer);
    }
  }
}

// Called where allocate_pairs is, so it sees the frames allocate_pairs' calls see.
__attribute__((noinline)) int frames_here() {
  void* frames[kMaxFrames];
  return backtrace(frames, kMaxFrames);
}

__attribute__((noinline)) void at_leaf(Job& job) {
  job.frames = frames_here();
  if (job.pairs == 0) return;
  // Warm-up: the pool's segment, the unwinder's caches, and a tool's start (heaptrack's
  // interpreter process drains the pipe only once it has started).
  const uint64_t warm_until = now_ns() + kWarmUpNs;
  long warm_pairs = 0;
  while (warm_pairs < job.pairs / 10 || now_ns() < warm_until) {
    allocate_pairs(job.allocator, kWarmUpChunk);
    warm_pairs += kWarmUpChunk;
  }
  const uint64_t start = now_ns();
  const uint64_t cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  allocate_pairs(job.allocator, job.pairs);
  const auto pairs = static_cast<double>(job.pairs);
  job.cpu_ns_per_pair = static_cast<double>(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / pairs;
  job.ns_per_pair = static_cast<double>(now_ns() - start) / pairs;
}

__attribute__((noinline)) void descend(int remaining, Job& job) {
  if (remaining > 0) {
    descend(remaining - 1, job);
  } else {
    at_leaf(job);
  }
  asm volatile("" ::: "memory");  // not a tail call: every level keeps its frame
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "cuda") != 0 && std::strcmp(argv[1], "malloc") != 0)) {
    std::fprintf(stderr, "usage: %s cuda|malloc DEPTH PAIRS\n", argv[0]);
    return 2;
  }
  const Allocator allocator =
      std::strcmp(argv[1], "cuda") == 0 ? Allocator::kCuda : Allocator::kMalloc;
  const int depth = std::atoi(argv[2]);
  const long pairs = std::atol(argv[3]);
  if (allocator == Allocator::kCuda) {
    check(cuInit(0), "cuInit");
    CUcontext context;
    check(cuDevicePrimaryCtxRetain(&context, 0), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  }
  Job probe{allocator, 0};
  descend(0, probe);
  const int levels = depth - probe.frames;
  if (levels < 0 || pairs <= 0) {
    std::fprintf(stderr, "DEPTH must be at least %d and PAIRS positive\n", probe.frames);
    return 2;
  }
  Job job{allocator, pairs};
  descend(levels, job);
  std::printf("frames=%d ns_per_pair=%.1f cpu_ns_per_pair=%.1f\n", job.frames, job.ns_per_pair,
              job.cpu_ns_per_pair);
  return 0;
}
