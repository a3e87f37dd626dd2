// Program threads cancelled (pthread_cancel, deferred) while inside a hooked call whose driver call
// sleeps (the simulated driver's allocation delay: a cancellation point). Without the shim each
// thread ends at that cancellation point or a later one, and the process goes on. Under it the same
// must hold: the cancellation may neither end the process (a catch-all that swallows it, a noexcept
// frame it would cross) nor leave the pool half-updated (a pool that hangs or fails afterwards).
// Cases: "grow" (cuMemAlloc_v2 that grows the pool: its driver call is the pool's), "legacy" (the
// 32-bit cuMemAlloc, passed through), "passthrough_free" (cuMemFree_v2 of memory the pool does not
// hold), "out_of_memory" (cuMemAlloc_v2 of more than the device has: the pool's retry and the
// failure's facts). For each case prints "CASE cancelled=C returned=R result=X", then, with the
// delay off,
// "after_pairs=N" (allocations and frees of several sizes that succeeded, of 64) and
// "driver_errors=N".
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

namespace {

constexpr uint64_t kDriverDelayUs = 400000;  // the cancellation arrives 50 ms into it

// The 32-bit cuMemAlloc (its pointer is a CUdeviceptr_v1: unsigned int), hidden by <cuda.h>.
using LegacyAlloc = CUresult (*)(unsigned int*, unsigned int);

struct Case {
  const char* name;
  CUcontext context;
  CUresult (*call)(Case&);
  std::atomic<bool> entered{false};
  std::atomic<bool> returned{false};
  CUresult result = CUDA_SUCCESS;
  CUdeviceptr ptr = 0;  // what the call allocated or freed
  LegacyAlloc legacy_alloc = nullptr;
};

CUresult grow(Case& c) { return cuMemAlloc(&c.ptr, size_t{64} << 20); }

CUresult legacy(Case& c) {
  unsigned int ptr = 0;
  const CUresult result = c.legacy_alloc(&ptr, 1 << 20);
  c.ptr = ptr;
  return result;
}

CUresult passthrough_free(Case& c) { return cuMemFree(c.ptr); }

// More than the simulated device has: the pool retries, then gathers the failure's facts (files
// read, processes asked: cancellation points) before it answers.
CUresult out_of_memory(Case& c) { return cuMemAlloc(&c.ptr, size_t{1} << 42); }

void* run_case(void* argument) {
  Case& c = *static_cast<Case*>(argument);
  if (cuCtxSetCurrent(c.context) != CUDA_SUCCESS) return nullptr;
  c.entered.store(true);
  c.result = c.call(c);
  c.returned.store(true);
  pthread_testcancel();  // the first cancellation point after the call
  return nullptr;
}

void cancel_inside(Case& c) {
  pthread_t thread;
  if (pthread_create(&thread, nullptr, run_case, &c) != 0) std::exit(2);
  while (!c.entered.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pthread_cancel(thread);
  void* outcome = nullptr;
  pthread_join(thread, &outcome);
  std::printf("%s cancelled=%d returned=%d result=%d\n", c.name, outcome == PTHREAD_CANCELED,
              c.returned.load() ? 1 : 0, static_cast<int>(c.result));
  std::fflush(stdout);
}

}  // namespace

int main() {
  const CUcontext context = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  const LegacyAlloc legacy_alloc = reinterpret_cast<LegacyAlloc>(dlsym(RTLD_DEFAULT, "cuMemAlloc"));
  const auto set_delay = reinterpret_cast<void (*)(uint64_t)>(
      dlsym(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), "fakecuda_set_alloc_delay_us"));
  CHECK_TRUE(legacy_alloc != nullptr && set_delay != nullptr);
  set_delay(kDriverDelayUs);

  Case grown{"grow", context, grow};
  cancel_inside(grown);
  Case legacy_allocation{"legacy", context, legacy};
  legacy_allocation.legacy_alloc = legacy_alloc;
  cancel_inside(legacy_allocation);
  // Memory the pool does not hold: the legacy allocation, or one made for the purpose.
  Case freed{"passthrough_free", context, passthrough_free};
  freed.ptr = legacy_allocation.ptr;
  if (freed.ptr == 0) {
    unsigned int ptr = 0;
    CHECK_CU(legacy_alloc(&ptr, 1 << 20));
    freed.ptr = ptr;
  }
  cancel_inside(freed);
  Case refused{"out_of_memory", context, out_of_memory};
  cancel_inside(refused);

  set_delay(0);
  if (grown.ptr != 0) CHECK_CU(cuMemFree(grown.ptr));
  if (!freed.returned.load()) cuMemFree(freed.ptr);  // the cancelled free may not have happened
  // The pool still serves and takes back every size, from this thread and from another.
  int after_pairs = 0;
  auto pairs = [&after_pairs] {
    for (size_t bytes : {size_t{512}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
      for (int i = 0; i < 8; ++i) {
        CUdeviceptr ptr = 0;
        if (cuMemAlloc(&ptr, bytes) == CUDA_SUCCESS && cuMemFree(ptr) == CUDA_SUCCESS) {
          ++after_pairs;
        }
      }
    }
  };
  pairs();
  std::thread other([&] {
    if (cuCtxSetCurrent(context) == CUDA_SUCCESS) pairs();
  });
  other.join();
  std::printf("after_pairs=%d\ndriver_errors=%llu\n", after_pairs,
              static_cast<unsigned long long>(fake.errors()));
  return 0;
}
