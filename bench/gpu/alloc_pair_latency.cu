// Latency of one cudaMalloc+cudaFree pair at several sizes (static cudart, nvcc's default), for
// bench/gpu/run.sh. Per size: a few warm-up pairs, then BATCHES batches of PAIRS pairs; prints the
// median batch's time per pair:
//   pair bytes=S us=X
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kBatches = 5;

bool allocate_and_free(size_t bytes) {
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaSuccess) status = cudaFree(block);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "alloc_pair_latency: %zu bytes: %s\n", bytes, cudaGetErrorString(status));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: alloc_pair_latency PAIRS_PER_BATCH BYTES...\n");
    return 2;
  }
  const int pairs = std::atoi(argv[1]);
  if (pairs <= 0) {
    std::fprintf(stderr, "alloc_pair_latency: bad pair count %s\n", argv[1]);
    return 2;
  }
  if (const cudaError_t status = cudaFree(nullptr); status != cudaSuccess) {
    std::fprintf(stderr, "alloc_pair_latency: cudaFree(0) failed: %s (%s)\n",
                 cudaGetErrorName(status), cudaGetErrorString(status));
    return 1;
  }
  for (int arg = 2; arg < argc; ++arg) {
    const size_t bytes = std::strtoull(argv[arg], nullptr, 10);
    for (int i = 0; i < 10; ++i)
      if (!allocate_and_free(bytes)) return 1;
    std::vector<double> per_pair_us;
    for (int batch = 0; batch < kBatches; ++batch) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < pairs; ++i)
        if (!allocate_and_free(bytes)) return 1;
      const auto elapsed = std::chrono::steady_clock::now() - start;
      per_pair_us.push_back(std::chrono::duration<double, std::micro>(elapsed).count() / pairs);
    }
    std::sort(per_pair_us.begin(), per_pair_us.end());
    std::printf("pair bytes=%zu us=%.3f\n", bytes, per_pair_us[kBatches / 2]);
    std::fflush(stdout);
  }
  return 0;
}
