// The shim's cost against the simulated driver. The shim is dlopen'ed with the VRAMSHIM_*
// environment the caller sets (bench/shim/run.sh runs each configuration as its own process; the
// shim reads its configuration once), and its exported hooks are called directly; the baselines
// call the simulated driver's own functions.
//   BM_*Pair:   cuMemAlloc_v2 + cuMemFree_v2 of one size (a forwarded pair with VRAMSHIM_POOL=off,
//               a pool hit with the pool on). BM_ShimPair/4096/real_time: one thread and two on
//               one context; items_per_second at 2 threads over 1 thread is that scaling.
//   BM_*Replay: a training-step-shaped workload (tests/unit/pool/training_workload), per
//               allocation; run with FAKECUDA_ALLOC_DELAY_US=60 to imitate the H200's driver.
//   BM_ShimPairOwnContext: pairs on a context of each thread's own, each on a device of its own
//               (as one process driving a GPU per thread); items_per_second at 2 threads over 1
//               thread is the scaling.
//   BM_ShimPairAcrossDevices: one thread moving among the primary contexts of N devices
//               (cuCtxSetCurrent, then a pair), as one thread of a process driving a node's GPUs.
//   BM_ShimChurn: with N blocks live, free a random one and allocate another, per pair; fixed
//               4 KiB or random 0.5 KiB - 1 MiB. Its host_bytes_per_live_allocation counter is the
//               resident anonymous memory (heap and mappings: the shim keeps its largest tables in
//               huge pages of their own) the shim and the driver add per live allocation.
//   BM_HarnessChurn: the same loop over functions that do nothing (an address from a counter):
//               what the benchmark itself costs (drawing the slot and the size, and at 1M live its
//               own cache miss on the slot), to subtract from BM_ShimChurn.
//   BM_DependentLoad: one load whose address depends on the one before, at random over N MiB (in
//               huge pages, as the shim keeps its large tables): the machine's price of a cache
//               miss at a footprint. A free at 1M live looks up its block in 16 MiB of address
//               table and 48 MiB of blocks: churn at 1M minus churn at 1k over this at 64 MiB is
//               how many such misses a pair waits for.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/unit/pool/training_workload.h"

namespace {

using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);

struct Driver {
  Alloc alloc;
  Free free;
};

std::string absolute(const char* runfile) {
  char resolved[PATH_MAX];
  if (realpath(runfile, resolved) == nullptr) {
    std::fprintf(stderr, "missing runfile %s (run with bazel run)\n", runfile);
    std::exit(1);
  }
  return resolved;
}

void* open_or_die(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror());
    std::exit(1);
  }
  return handle;
}

template <typename Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// The simulated driver, loaded RTLD_LOCAL (as XLA loads the driver), its primary context current on
// the calling thread.
const Driver& fake() {
  static void* const handle = [] {
    setenv("FAKECUDA_DEVICES", "8", 0);  // for BM_ShimPairOwnContext
    return open_or_die(absolute("tests/fakecuda/libcuda.so.1"));
  }();
  static const Driver driver = [] {
    auto init = symbol<CUresult (*)(unsigned)>(handle, "cuInit");
    if (init(0) != CUDA_SUCCESS) {
      std::fprintf(stderr, "simulated driver failed to start\n");
      std::exit(1);
    }
    return Driver{symbol<Alloc>(handle, "cuMemAlloc_v2"), symbol<Free>(handle, "cuMemFree_v2")};
  }();
  thread_local bool current = [] {
    auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(handle, "cuDevicePrimaryCtxRetain");
    auto set_current = symbol<CUresult (*)(CUcontext)>(handle, "cuCtxSetCurrent");
    CUcontext context;
    return retain(&context, 0) == CUDA_SUCCESS && set_current(context) == CUDA_SUCCESS;
  }();
  benchmark::DoNotOptimize(current);
  return driver;
}

void* shim_library() {
  static void* const handle = [] {
    fake();
    setenv("VRAMSHIM_SOCKET", "off", 0);
    setenv("VRAMSHIM_REPORT", "off", 0);
    return open_or_die(absolute("shim/libvramshim.so"));
  }();
  return handle;
}

const Driver& shim() {
  static const Driver driver{symbol<Alloc>(shim_library(), "cuMemAlloc_v2"),
                             symbol<Free>(shim_library(), "cuMemFree_v2")};
  fake();  // the calling thread's context
  return driver;
}

// A context of the calling thread's own on device `device`, made current on it (once per thread).
bool use_own_context(int device) {
  thread_local bool made = [device] {
    void* handle = open_or_die(absolute("tests/fakecuda/libcuda.so.1"));
    auto create = symbol<CUresult (*)(CUcontext*, unsigned, CUdevice)>(handle, "cuCtxCreate_v2");
    CUcontext context;
    return create(&context, 0, device) == CUDA_SUCCESS;
  }();
  return made;
}

// A context of its own on device 0, current on the calling thread while this lives, and destroyed
// through the shim (which releases its pool) after: each churn case starts from an empty pool,
// whatever ran before it. Otherwise the case after the 1M one would merge the million 4 KiB blocks
// that case left cached, on its own time.
class FreshContext {
 public:
  FreshContext() {
    void* driver = open_or_die(absolute("tests/fakecuda/libcuda.so.1"));
    set_current_ = symbol<CUresult (*)(CUcontext)>(driver, "cuCtxSetCurrent");
    auto get_current = symbol<CUresult (*)(CUcontext*)>(driver, "cuCtxGetCurrent");
    auto create = symbol<CUresult (*)(CUcontext*, unsigned, CUdevice)>(driver, "cuCtxCreate_v2");
    made_ = get_current(&previous_) == CUDA_SUCCESS && create(&context_, 0, 0) == CUDA_SUCCESS;
  }
  ~FreshContext() {
    if (!made_) return;
    symbol<CUresult (*)(CUcontext)>(shim_library(), "cuCtxDestroy_v2")(context_);
    set_current_(previous_);
  }
  FreshContext(const FreshContext&) = delete;
  FreshContext& operator=(const FreshContext&) = delete;

  bool made() const { return made_; }

 private:
  CUresult (*set_current_)(CUcontext) = nullptr;
  CUcontext previous_ = nullptr;
  CUcontext context_ = nullptr;
  bool made_ = false;
};

// The process's resident anonymous memory (RssAnon), 0 when /proc cannot tell.
uint64_t resident_anonymous_bytes() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::sscanf(line, "RssAnon: %" SCNu64 " kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib * 1024;
}

void run_pairs(benchmark::State& state, const Driver& driver) {
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    if (driver.alloc(&ptr, static_cast<size_t>(state.range(0))) != CUDA_SUCCESS ||
        driver.free(ptr) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      break;
    }
    benchmark::DoNotOptimize(ptr);
  }
  state.SetItemsProcessed(state.iterations());  // pairs
}

void run_replay(benchmark::State& state, const Driver& driver) {
  static const auto ops = vramshim::pool::testing::training_workload(/*seed=*/7, /*steps=*/5);
  std::unordered_map<uint32_t, CUdeviceptr> live;
  for (auto _ : state) {
    for (const auto& op : ops) {
      if (op.allocate) {
        CUdeviceptr ptr = 0;
        if (driver.alloc(&ptr, op.bytes) != CUDA_SUCCESS) {
          state.SkipWithError("allocation failed");
          return;
        }
        live[op.id] = ptr;
      } else {
        driver.free(live[op.id]);
        live.erase(op.id);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * vramshim::pool::testing::count_allocations(ops));
}

// With state.range(0) blocks live, frees a random one and allocates one in its place; sizes fixed
// at 4 KiB (state.range(1) == 0) or random from 0.5 KiB to 1 MiB. On a fresh context: a pool of its
// own, empty at the start.
void run_churn(benchmark::State& state, const Driver& driver) {
  const FreshContext context;
  if (!context.made()) {
    state.SkipWithError("cuCtxCreate failed");
    return;
  }
  const size_t live_count = static_cast<size_t>(state.range(0));
  const bool random_sizes = state.range(1) != 0;
  std::mt19937_64 random(42);
  std::uniform_int_distribution<size_t> size_of(512, size_t{1} << 20);
  auto next_size = [&] { return random_sizes ? size_of(random) : size_t{4096}; };
  std::vector<CUdeviceptr> live(live_count);
  const uint64_t memory_before = resident_anonymous_bytes();
  for (CUdeviceptr& ptr : live) {
    if (driver.alloc(&ptr, next_size()) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      return;
    }
  }
  const uint64_t memory_live = resident_anonymous_bytes();
  std::uniform_int_distribution<size_t> pick(0, live_count - 1);
  for (auto _ : state) {
    CUdeviceptr& slot = live[pick(random)];
    if (driver.free(slot) != CUDA_SUCCESS || driver.alloc(&slot, next_size()) != CUDA_SUCCESS) {
      state.SkipWithError("churn failed");
      break;
    }
  }
  for (CUdeviceptr ptr : live) driver.free(ptr);
  state.SetItemsProcessed(state.iterations());  // pairs
  state.counters["host_bytes_per_live_allocation"] =
      static_cast<double>(memory_live - memory_before) / static_cast<double>(live_count);
}

void BM_DriverPair(benchmark::State& state) { run_pairs(state, fake()); }
void BM_ShimPair(benchmark::State& state) { run_pairs(state, shim()); }
void BM_ShimPairOwnContext(benchmark::State& state) {
  const Driver& driver = shim();
  if (!use_own_context(state.thread_index() % 8)) {
    state.SkipWithError("cuCtxCreate failed");
    return;
  }
  run_pairs(state, driver);
}
void BM_ShimPairAcrossDevices(benchmark::State& state) {
  const Driver& driver = shim();
  void* handle = open_or_die(absolute("tests/fakecuda/libcuda.so.1"));
  auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(handle, "cuDevicePrimaryCtxRetain");
  auto set_current = symbol<CUresult (*)(CUcontext)>(handle, "cuCtxSetCurrent");
  std::vector<CUcontext> contexts(static_cast<size_t>(state.range(0)));
  for (size_t device = 0; device < contexts.size(); ++device) {
    if (retain(&contexts[device], static_cast<CUdevice>(device)) != CUDA_SUCCESS) {
      state.SkipWithError("cuDevicePrimaryCtxRetain failed");
      return;
    }
  }
  size_t next = 0;
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    if (set_current(contexts[next]) != CUDA_SUCCESS || driver.alloc(&ptr, 4096) != CUDA_SUCCESS ||
        driver.free(ptr) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      break;
    }
    next = next + 1 == contexts.size() ? 0 : next + 1;
  }
  set_current(contexts[0]);
  state.SetItemsProcessed(state.iterations());  // pairs
}
void BM_ShimChurn(benchmark::State& state) { run_churn(state, shim()); }
CUresult next_address(CUdeviceptr* ptr, size_t) {
  static CUdeviceptr counter = 0;
  *ptr = (counter += 512);
  return CUDA_SUCCESS;
}
CUresult forget_address(CUdeviceptr) { return CUDA_SUCCESS; }
void BM_HarnessChurn(benchmark::State& state) {
  static Driver nothing{&next_address, &forget_address};
  benchmark::DoNotOptimize(nothing);  // called through the pointers, as the driver's are
  fake();                             // the simulated driver started, for the churn's context
  run_churn(state, nothing);
}
void BM_DependentLoad(benchmark::State& state) {
  constexpr size_t kLine = 64;
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  madvise(memory, bytes, MADV_HUGEPAGE);
  // One cycle through every line in a random order: each line holds the next line's offset.
  const size_t lines = bytes / kLine;
  std::vector<size_t> order(lines);
  for (size_t i = 0; i < lines; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  char* base = static_cast<char*>(memory);
  for (size_t i = 0; i < lines; ++i) {
    *reinterpret_cast<size_t*>(base + order[i] * kLine) = order[(i + 1) % lines] * kLine;
  }
  size_t offset = 0;
  for (auto _ : state) {
    for (int i = 0; i < 64; ++i) offset = *reinterpret_cast<const size_t*>(base + offset);
  }
  benchmark::DoNotOptimize(offset);
  munmap(memory, bytes);
  state.SetItemsProcessed(state.iterations() * 64);  // loads
}
void BM_DriverReplay(benchmark::State& state) { run_replay(state, fake()); }
void BM_ShimReplay(benchmark::State& state) { run_replay(state, shim()); }

// 4 KiB is carved from 2 MiB segments; 32 MiB is a segment of its own, so each reuse of it waits
// for the pool's marker on the legacy stream (one driver call).
BENCHMARK(BM_DriverPair)->Arg(4096);
BENCHMARK(BM_ShimPair)->Arg(4096)->Arg(32 << 20)->Threads(1)->Threads(2);
BENCHMARK(BM_ShimPair)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();  // one-context scaling
BENCHMARK(BM_ShimPairOwnContext)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ShimPairAcrossDevices)->Arg(1)->Arg(8);
BENCHMARK(BM_ShimChurn)
    ->Args({1000, 0})
    ->Args({100000, 0})
    ->Args({1000000, 0})
    ->Args({1000, 1})
    ->Iterations(200000);
BENCHMARK(BM_HarnessChurn)
    ->Args({1000, 0})
    ->Args({1000000, 0})
    ->Args({1000, 1})
    ->Iterations(200000);
BENCHMARK(BM_DependentLoad)->Arg(1)->Arg(16)->Arg(64);
BENCHMARK(BM_DriverReplay)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ShimReplay)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
