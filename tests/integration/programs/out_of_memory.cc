// Runs one out-of-memory scenario against the simulated driver (FAKECUDA_CAPACITY sets the
// device's size). Modes:
//   exhaustion     hold_everything() allocates 64 MiB blocks until the device refuses
//   fragmentation  1 MiB blocks fill the device exactly, every other one is freed, then 1.5 MiB is
//                  asked
//   limit          (with VRAMSHIM_LIMIT) blocks until the limit refuses
//   async          stream-ordered blocks until the driver refuses
//   retry          exhaustion, then free half and retry, as PyTorch does after freeing its cache
//   storm          4 threads, each failing 2,500 times
//   persistent     exhaustion, then 100 more failures 10 ms apart (a job retrying in a loop)
//   brief          exhaustion, then exit 150 ms later (a job that dies of it)
//   together DIR   ranks failing together: creates DIR/ready.PID, waits for DIR/start, exhausts
//                  the device, then stays (its control thread answering) until DIR/stop exists;
//                  prints "pid=PID" too
//   sites          100,000 live allocations from as many call paths, then exhaustion; prints the
//                  failing call's duration (failing_call_us), what the explanation costs it
// Prints "failures=N" (allocations that returned CUDA_ERROR_OUT_OF_MEMORY) and "done".
#include <cuda.h>

#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/primary_context.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::vector<CUdeviceptr> g_held;

extern "C" __attribute__((noinline)) int hold_everything(size_t block) {
  for (;;) {
    CUdeviceptr ptr = 0;
    const CUresult result = cuMemAlloc(&ptr, block);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return 1;
    CHECK_CU(result);
    g_held.push_back(ptr);
  }
}

extern "C" __attribute__((noinline)) int fill_with_small_blocks() {
  size_t free = 0, total = 0;
  CHECK_CU(cuMemGetInfo(&free, &total));
  for (size_t i = 0; i < free / kMiB; ++i) {  // exactly full: no failure yet
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, kMiB));
    g_held.push_back(ptr);
  }
  for (size_t i = 0; i < g_held.size(); i += 2) CHECK_CU(cuMemFree(g_held[i]));
  CUdeviceptr ptr = 0;
  return cuMemAlloc(&ptr, kMiB + kMiB / 2) == CUDA_ERROR_OUT_OF_MEMORY ? 1 : 0;
}

extern "C" __attribute__((noinline)) int hold_stream_ordered() {
  for (;;) {
    CUdeviceptr ptr = 0;
    const CUresult result = cuMemAllocAsync(&ptr, 64 * kMiB, nullptr);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return 1;
    CHECK_CU(result);
  }
}

// Two functions calling each other by the bits of `path`: each of 2^17 paths is a distinct stack.
extern "C" __attribute__((noinline)) void path_b(int depth, uint32_t path);
extern "C" __attribute__((noinline)) void path_a(int depth, uint32_t path) {
  if (depth == 0) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 512));
    return;
  }
  (path & 1) ? path_b(depth - 1, path >> 1) : path_a(depth - 1, path >> 1);
  asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void path_b(int depth, uint32_t path) {
  if (depth == 0) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 512));
    return;
  }
  (path & 1) ? path_b(depth - 1, path >> 1) : path_a(depth - 1, path >> 1);
  asm volatile("" ::: "memory");
}

int many_sites() {
  for (uint32_t path = 0; path < 100000; ++path) path_a(17, path);
  for (;;) {  // the first failure is the one explained
    timespec before{}, after{};
    clock_gettime(CLOCK_MONOTONIC, &before);
    CUdeviceptr ptr = 0;
    const CUresult result = cuMemAlloc(&ptr, 64 * kMiB);
    clock_gettime(CLOCK_MONOTONIC, &after);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
      std::printf("failing_call_us=%lld\n",
                  static_cast<long long>((after.tv_sec - before.tv_sec) * 1000000LL +
                                         (after.tv_nsec - before.tv_nsec) / 1000));
      return 1;
    }
    CHECK_CU(result);
  }
}

int storm(CUcontext context) {
  hold_everything(64 * kMiB);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      CHECK_CU(cuCtxSetCurrent(context));
      for (int i = 0; i < 2500; ++i) {
        CUdeviceptr ptr = 0;
        if (cuMemAlloc(&ptr, 64 * kMiB) == CUDA_ERROR_OUT_OF_MEMORY) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  int total = 1;
  for (int count : failures) total += count;
  return total;
}

int persistent() {
  int failures = hold_everything(64 * kMiB);
  for (int i = 0; i < 100; ++i) {
    const timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
    CUdeviceptr ptr = 0;
    if (cuMemAlloc(&ptr, 64 * kMiB) == CUDA_ERROR_OUT_OF_MEMORY) ++failures;
  }
  return failures;
}

// Waits (at most 60 s) until `path` exists.
void wait_for_file(const std::string& path) {
  for (int i = 0; i < 60000 && ::access(path.c_str(), F_OK) != 0; ++i) {
    const timespec pause{0, 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

int together(const std::string& directory) {
  std::FILE* ready = std::fopen((directory + "/ready." + std::to_string(::getpid())).c_str(), "w");
  if (ready != nullptr) std::fclose(ready);
  wait_for_file(directory + "/start");
  const int failures = hold_everything(64 * kMiB);
  wait_for_file(directory + "/stop");
  std::printf("pid=%d\n", static_cast<int>(::getpid()));
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "exhaustion";
  const CUcontext context = use_primary_context();
  int failures = 0;
  if (std::strcmp(mode, "exhaustion") == 0 || std::strcmp(mode, "limit") == 0) {
    failures = hold_everything(64 * kMiB);
  } else if (std::strcmp(mode, "fragmentation") == 0) {
    failures = fill_with_small_blocks();
  } else if (std::strcmp(mode, "async") == 0) {
    failures = hold_stream_ordered();
  } else if (std::strcmp(mode, "retry") == 0) {
    failures = hold_everything(64 * kMiB);
    for (size_t i = 0; i < g_held.size() / 2; ++i) CHECK_CU(cuMemFree(g_held[i]));
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 64 * kMiB));
  } else if (std::strcmp(mode, "sites") == 0) {
    failures = many_sites();
  } else if (std::strcmp(mode, "storm") == 0) {
    failures = storm(context);
  } else if (std::strcmp(mode, "persistent") == 0) {
    failures = persistent();
  } else if (std::strcmp(mode, "together") == 0 && argc > 2) {
    failures = together(argv[2]);
  } else if (std::strcmp(mode, "brief") == 0) {
    failures = hold_everything(64 * kMiB);
    const timespec pause{0, 150 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  std::printf("failures=%d\ndone\n", failures);
  return 0;
}
