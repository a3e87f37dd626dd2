// Pool hit cost, churn with many blocks live (through the pool and on the block store alone), the
// training-step replay through the pool against the driver called directly (with an H200-like 60 µs
// per call), and what splitting saves in peak reserved memory.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "shim/pool/block_store.h"
#include "shim/pool/caching_pool.h"
#include "shim/support/huge_pages.h"
#include "tests/unit/pool/fake_device_api.h"
#include "tests/unit/pool/training_workload.h"

namespace vramshim::pool {
namespace {

using testing::FakeDeviceApi;
using testing::WorkloadOp;

constexpr auto kDriverCallCost = std::chrono::microseconds(60);

// The fake with the cost of a real cuMemAlloc / cuMemFree: a busy wait, as the driver's is CPU
// time.
class SlowDriver : public FakeDeviceApi {
 public:
  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override {
    spin();
    return FakeDeviceApi::allocate(bytes, ptr);
  }
  CUresult free(CUdeviceptr ptr) override {
    spin();
    return FakeDeviceApi::free(ptr);
  }

 private:
  static void spin() {
    const auto until = std::chrono::steady_clock::now() + kDriverCallCost;
    while (std::chrono::steady_clock::now() < until) {
    }
  }
};

struct BenchPool {
  explicit BenchPool(PoolOptions options = {}, uint64_t capacity = uint64_t{80} << 30)
      : fake(capacity), pool(fake, options, limit, capture) {}
  CaptureState capture;
  FakeDeviceApi fake;
  DeviceLimit limit;
  CachingPool pool;
};

// Replays `ops` through `allocate` / `free`; returns the number of allocations.
template <typename Allocate, typename Free>
size_t replay(const std::vector<WorkloadOp>& ops, Allocate&& allocate, Free&& free) {
  std::unordered_map<uint32_t, CUdeviceptr> live;
  live.reserve(256);
  size_t allocations = 0;
  for (const WorkloadOp& op : ops) {
    if (op.allocate) {
      live[op.id] = allocate(op.bytes);
      ++allocations;
    } else {
      free(live[op.id]);
      live.erase(op.id);
    }
  }
  return allocations;
}

BenchPool* shared_pool = nullptr;

void BM_PoolHit(benchmark::State& state) {
  if (state.thread_index() == 0) shared_pool = new BenchPool();
  CachingPool& pool = shared_pool->pool;
  const size_t bytes = static_cast<size_t>(state.range(0));
  CUdeviceptr warm = 0;
  pool.allocate(bytes, &warm);
  pool.free(warm);
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    pool.allocate(bytes, &ptr);
    benchmark::DoNotOptimize(ptr);
    pool.free(ptr);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    delete shared_pool;
    shared_pool = nullptr;
  }
}
BENCHMARK(BM_PoolHit)->Arg(4096)->Arg(32 << 20)->Threads(1)->Threads(2)->UseRealTime();

// What a churn frees and asks for: a random live block, and fixed 4 KiB or random 0.5 KiB - 1 MiB
// sizes; the same sequence in every run.
class ChurnSizes {
 public:
  explicit ChurnSizes(bool random_sizes) : random_sizes_(random_sizes) {}
  size_t next() { return random_sizes_ ? size_of_(random_) : size_t{4096}; }
  size_t pick(size_t live_count) {
    return std::uniform_int_distribution<size_t>(0, live_count - 1)(random_);
  }

 private:
  bool random_sizes_;
  std::mt19937_64 random_{42};
  std::uniform_int_distribution<size_t> size_of_{512, size_t{1} << 20};
};

// Churn: with state.range(0) blocks live, free a random one and allocate another in its place, per
// pair; sizes fixed at 4 KiB (state.range(1) == 0) or random. The pool-alone counterpart of
// bench/shim's BM_ShimChurn.
void BM_PoolChurn(benchmark::State& state) {
  const size_t live_count = static_cast<size_t>(state.range(0));
  ChurnSizes sizes(state.range(1) != 0);
  // A million blocks of up to 1 MiB: more than a real device holds, but the fake holds no memory.
  BenchPool bench(PoolOptions{}, uint64_t{4} << 40);
  std::vector<CUdeviceptr> live(live_count);
  for (CUdeviceptr& ptr : live) {
    if (bench.pool.allocate(sizes.next(), &ptr) != CUDA_SUCCESS) {
      state.SkipWithError("allocation failed");
      return;
    }
  }
  for (auto _ : state) {
    CUdeviceptr& slot = live[sizes.pick(live_count)];
    if (!bench.pool.free(slot).owned || bench.pool.allocate(sizes.next(), &slot) != CUDA_SUCCESS) {
      state.SkipWithError("churn failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());  // pairs
  state.counters["reserved_per_in_use"] =
      static_cast<double>(bench.pool.stats().reserved_bytes) / bench.pool.stats().in_use_bytes;
}

// The same churn on the block store alone: a freed block is free again at once (no fence), and a
// request no free block serves gets a new segment at a made-up address.
void BM_BlockStoreChurn(benchmark::State& state) {
  const size_t live_count = static_cast<size_t>(state.range(0));
  ChurnSizes sizes(state.range(1) != 0);
  BlockStore store{SizePolicy()};
  CUdeviceptr next_segment = 0x100000000000;
  auto allocate = [&](size_t bytes) {
    const size_t rounded = SizePolicy::round(bytes);
    if (Block* block = store.take(rounded)) return block->ptr;
    const size_t segment_size = store.policy().segment_size(rounded);
    const CUdeviceptr base = next_segment;
    next_segment += 2 * segment_size;  // never adjacent, as the driver's
    return store.add_segment_and_take(base, segment_size, rounded)->ptr;
  };
  std::vector<CUdeviceptr> live(live_count);
  for (CUdeviceptr& ptr : live) ptr = allocate(sizes.next());
  for (auto _ : state) {
    CUdeviceptr& slot = live[sizes.pick(live_count)];
    store.make_free(store.retire(slot));
    slot = allocate(sizes.next());
  }
  state.SetItemsProcessed(state.iterations());  // pairs
}

// The floor under churn at 1M live: a free must read its block's bookkeeping, one of a million
// spread over tens of MiB, at an address known only from the pointer freed, so at least one load
// that misses every cache and waits for the one before it. A pointer chase through a million 64 B
// lines (64 MiB) in a random cycle, in 4 KiB pages (huge:0) and in 2 MiB pages (huge:1), is that
// load alone, per item.
template <typename Lines>
void chase(benchmark::State& state, Lines& lines) {
  std::mt19937_64 random(42);
  // Sattolo's shuffle: one cycle through every line.
  std::vector<uint32_t> order(lines.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[std::uniform_int_distribution<size_t>(0, i - 1)(random)]);
  }
  for (size_t i = 0; i < order.size(); ++i) lines[i].next = &lines[order[i]];
  const auto* line = &lines[0];
  for (auto _ : state) {
    line = line->next;
    benchmark::DoNotOptimize(line);
  }
  state.SetItemsProcessed(state.iterations());  // dependent loads
}

struct CacheLine {
  const CacheLine* next;
  char rest[56];
};

void BM_DependentMiss(benchmark::State& state) {
  constexpr size_t kLines = size_t{1} << 20;
  if (state.range(0) != 0) {
    std::vector<CacheLine, support::HugePageAllocator<CacheLine>> lines(kLines);
    chase(state, lines);
  } else {
    std::vector<CacheLine> lines(kLines);
    chase(state, lines);
  }
}
BENCHMARK(BM_DependentMiss)->ArgName("huge")->Arg(0)->Arg(1)->Iterations(10000000);

// 1k, 100k and 1M live, fixed and random sizes; a million pairs each (at 1M live, about one per
// live block).
void churn_args(benchmark::internal::Benchmark* benchmark) {
  for (int64_t random_sizes : {0, 1}) {
    for (int64_t live : {1000, 100000, 1000000}) benchmark->Args({live, random_sizes});
  }
  benchmark->ArgNames({"live", "random"})->Iterations(1000000);
}
BENCHMARK(BM_PoolChurn)->Apply(churn_args);
BENCHMARK(BM_BlockStoreChurn)->Apply(churn_args);

void BM_ReplayThroughPool(benchmark::State& state) {
  const std::vector<WorkloadOp> ops = testing::training_workload(7, 100);
  size_t allocations = 0;
  for (auto _ : state) {
    BenchPool bench;
    allocations += replay(
        ops,
        [&](size_t bytes) {
          CUdeviceptr ptr = 0;
          bench.pool.allocate(bytes, &ptr);
          return ptr;
        },
        [&](CUdeviceptr ptr) { bench.pool.free(ptr); });
  }
  state.counters["time_per_allocation"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReplayThroughPool)->Unit(benchmark::kMillisecond);

// The same replay with the 60 µs driver, through the pool and straight to the driver.
void BM_ReplaySlowDriver(benchmark::State& state) {
  const bool pooled = state.range(0) != 0;
  const std::vector<WorkloadOp> ops = testing::training_workload(7, 20);
  size_t allocations = 0;
  for (auto _ : state) {
    CaptureState capture;
    SlowDriver driver;
    DeviceLimit limit;
    CachingPool pool(driver, PoolOptions{}, limit, capture);
    allocations += replay(
        ops,
        [&](size_t bytes) {
          CUdeviceptr ptr = 0;
          if (pooled) {
            pool.allocate(bytes, &ptr);
          } else {
            driver.allocate(bytes, &ptr);
          }
          return ptr;
        },
        [&](CUdeviceptr ptr) {
          if (pooled) {
            pool.free(ptr);
          } else {
            driver.free(ptr);
          }
        });
  }
  state.counters["time_per_allocation"] = benchmark::Counter(
      static_cast<double>(allocations), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReplaySlowDriver)->ArgName("pooled")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Peak reserved / peak in use over the replay, splitting blocks or never splitting them.
void BM_ReplayPeakReservedRatio(benchmark::State& state) {
  PoolOptions options;
  options.split_blocks = state.range(0) != 0;
  const std::vector<WorkloadOp> ops = testing::training_workload(7, 100);
  double ratio_sum = 0;
  double driver_calls = 0;
  double driver_frees = 0;
  for (auto _ : state) {
    BenchPool bench(options);
    replay(
        ops,
        [&](size_t bytes) {
          CUdeviceptr ptr = 0;
          bench.pool.allocate(bytes, &ptr);
          return ptr;
        },
        [&](CUdeviceptr ptr) { bench.pool.free(ptr); });
    const PoolStats stats = bench.pool.stats();
    ratio_sum += static_cast<double>(stats.peak_reserved_bytes) / stats.peak_in_use_bytes;
    driver_calls += static_cast<double>(stats.driver_alloc_calls);
    driver_frees += static_cast<double>(stats.driver_free_calls);
  }
  state.counters["peak_reserved_per_peak_in_use"] = ratio_sum / state.iterations();
  state.counters["driver_alloc_calls"] = driver_calls / state.iterations();
  state.counters["driver_free_calls"] = driver_frees / state.iterations();
}
BENCHMARK(BM_ReplayPeakReservedRatio)
    ->ArgName("split")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vramshim::pool

BENCHMARK_MAIN();
