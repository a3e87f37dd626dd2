// cudaMalloc/cudaFree pairs through the CUDA runtime (static or shared cudart, as nvcc links it),
// for checks 1 and 2 of tests/gpu/run.sh. Prints one line:
//   alloc_loop pairs=N bytes=S us_per_pair=X
// The first cudaFree(0) creates the context outside the timed loop. Each block is written with
// cudaMemset and read back once, so a pointer the pool hands out must be real device memory.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

static bool check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "alloc_loop: %s failed: %s (%s)\n", what, cudaGetErrorName(status),
               cudaGetErrorString(status));
  return false;
}

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 10000;
  const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
  if (pairs <= 0 || bytes == 0) {
    std::fprintf(stderr, "usage: alloc_loop [PAIRS] [BYTES]\n");
    return 2;
  }
  if (!check(cudaFree(nullptr), "cudaFree(0)")) return 1;

  void* block = nullptr;
  if (!check(cudaMalloc(&block, bytes), "cudaMalloc")) return 1;
  if (!check(cudaMemset(block, 0x5a, bytes), "cudaMemset")) return 1;
  unsigned char last = 0;
  if (!check(cudaMemcpy(&last, static_cast<char*>(block) + bytes - 1, 1, cudaMemcpyDeviceToHost),
             "cudaMemcpy"))
    return 1;
  if (last != 0x5a) {
    std::fprintf(stderr, "alloc_loop: read back 0x%02x, wrote 0x5a\n", last);
    return 1;
  }
  if (!check(cudaFree(block), "cudaFree")) return 1;

  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < pairs; ++i) {
    if (!check(cudaMalloc(&block, bytes), "cudaMalloc")) return 1;
    if (!check(cudaFree(block), "cudaFree")) return 1;
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const double us = std::chrono::duration<double, std::micro>(elapsed).count() / pairs;
  std::printf("alloc_loop pairs=%ld bytes=%zu us_per_pair=%.3f\n", pairs, bytes, us);
  return 0;
}
