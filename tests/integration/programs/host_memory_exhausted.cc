// The host's memory runs out inside the shim: an address-space limit makes a growing table of the
// pool fail to map. The call that meets it must fail with CUDA_ERROR_OUT_OF_MEMORY rather than end
// the process; the blocks the pool handed out keep their data; later allocations come from the
// driver; no pooled pointer, and no pool segment (an idle release, with VRAMSHIM_IDLE_RELEASE=1),
// reaches the driver's free; and the process exits normally even with the address space still
// limited ("exit_limited": its exit report cannot be made). Prints where the first allocation
// failed, its error, the blocks whose data changed, the allocations made after the limit was
// lifted, the segments the driver freed meanwhile, and the driver's errors (frees of unknown
// pointers).
#include <cuda.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

namespace {

constexpr size_t kSmall = 512;
constexpr size_t kAttempts = 80000;  // past the pool's block chunks of 1.5 MiB, mapped apart
constexpr size_t kChecked = 1000;
constexpr unsigned char kPattern = 0x5A;

uint64_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

bool holds_pattern(CUdeviceptr ptr) {
  unsigned char host[kSmall];
  CHECK_CU(cuMemcpyDtoH(host, ptr, kSmall));
  for (unsigned char byte : host) {
    if (byte != kPattern) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool exit_limited = argc > 1 && std::strcmp(argv[1], "exit_limited") == 0;
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  // Device memory first, while the address space is free: 24 segments of 2 MiB, kept by the pool.
  std::vector<CUdeviceptr> warm(48);
  for (CUdeviceptr& ptr : warm) CHECK_CU(cuMemAlloc(&ptr, 1 << 20));
  for (CUdeviceptr ptr : warm) CHECK_CU(cuMemFree(ptr));
  std::vector<CUdeviceptr> small;
  small.reserve(kAttempts);

  rlimit unlimited;
  CHECK_TRUE(getrlimit(RLIMIT_AS, &unlimited) == 0);
  rlimit tight = unlimited;
  tight.rlim_cur = address_space_bytes() + (1 << 20);
  CHECK_TRUE(setrlimit(RLIMIT_AS, &tight) == 0);
  size_t failed_at = kAttempts;
  CUresult failure = CUDA_SUCCESS;
  for (size_t i = 0; i < kAttempts; ++i) {
    CUdeviceptr ptr = 0;
    failure = cuMemAlloc(&ptr, kSmall);
    if (failure != CUDA_SUCCESS) {
      failed_at = i;
      break;
    }
    small.push_back(ptr);
  }
  CHECK_TRUE(setrlimit(RLIMIT_AS, &unlimited) == 0);

  const size_t checked = std::min(kChecked, small.size());
  for (size_t i = 0; i < checked; ++i) CHECK_CU(cuMemsetD8(small[i], kPattern, kSmall));
  // Half of them freed: they must stay out of every later allocation.
  for (size_t i = 0; i < checked / 2; ++i) CHECK_CU(cuMemFree(small[i]));
  int after = 0;
  std::vector<CUdeviceptr> later;
  for (size_t i = 0; i < kChecked; ++i) {
    CUdeviceptr ptr = 0;
    if (cuMemAlloc(&ptr, kSmall) != CUDA_SUCCESS) break;
    CHECK_CU(cuMemsetD8(ptr, ~kPattern & 0xFF, kSmall));
    later.push_back(ptr);
    ++after;
  }
  int corrupted = 0;
  for (size_t i = checked / 2; i < checked; ++i) corrupted += holds_pattern(small[i]) ? 0 : 1;
  const uint64_t frees_before = fake.calls("cuMemFree_v2");
  for (CUdeviceptr ptr : later) CHECK_CU(cuMemFree(ptr));
  for (size_t i = checked / 2; i < small.size(); ++i) CHECK_CU(cuMemFree(small[i]));
  // Past the idle period: a pool still releasing would free its segments now.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const uint64_t segment_frees = fake.calls("cuMemFree_v2") - frees_before - later.size();
  std::printf(
      "failed_at=%zu failure=%d corrupted=%d after=%d segment_frees=%llu driver_errors=%llu\n",
      failed_at, static_cast<int>(failure), corrupted, after,
      static_cast<unsigned long long>(segment_frees),
      static_cast<unsigned long long>(fake.errors()));
  std::fflush(stdout);
  if (exit_limited) {
    tight.rlim_cur = address_space_bytes() + (64 << 10);
    CHECK_TRUE(setrlimit(RLIMIT_AS, &tight) == 0);
  }
  return 0;
}
