// The pool must never hand out memory that queued GPU work still writes. Each round queues a slow
// write to block A on one stream (a host function that sleeps, then an async memset), frees A,
// allocates the same size at once (the pool's first choice is A), writes a pattern to the new
// block on another stream, synchronizes and reads back: the pattern must be intact.
//
// A mode names the streams the slow writes go to and those the new owner writes on. The pool
// hears of the streams created here, but never of the per-thread default streams (reached through
// the _ptsz variants, or through CU_STREAM_PER_THREAD passed to an ordinary entry point); "green"
// writes on a green context's stream, "unhooked_creator" on a stream made through an entry point
// the shim does not hook, "next_door" on one a helper made with the driver's cuStreamCreate found
// by dlsym(RTLD_NEXT, …), "deepbind" on one a plugin dlopen'ed with RTLD_DEEPBIND made with the
// driver's, "other_context" on streams of another context of the same device, which
// reaches the pool's memory too, "other_device" on device 1's legacy stream (run with two devices:
// a unified-addressing write of device 0's block that nothing of device 0 orders), and "destroyed"
// modes destroy a stream while its write is still queued, before the free. Sizes are random (512 B
// to 256 KiB), or with "repeating" four sizes, which the threads' caches of the pool serve.
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/green_context.h"
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

// Where a round's work goes.
struct Lane {
  enum Kind {
    kStream,            // `stream` through the ordinary entry points (0 is the legacy stream)
    kPerThreadVariant,  // the _ptsz entry points with stream 0
    kTemporary,         // a stream of `flags` made for the round, destroyed before the free
  };
  Kind kind = kStream;
  CUstream stream = nullptr;
  unsigned flags = 0;
  CUcontext context = nullptr;  // another context of the device, made current for the work
};

Lane on(CUstream stream) { return {Lane::kStream, stream, 0}; }
Lane per_thread_variant() { return {Lane::kPerThreadVariant, nullptr, 0}; }
Lane temporary(unsigned flags) { return {Lane::kTemporary, nullptr, flags}; }
Lane in_context(CUcontext context, CUstream stream) { return {Lane::kStream, stream, 0, context}; }

// Makes `lane`'s context current, if it names one, for the scope.
class LaneContext {
 public:
  explicit LaneContext(const Lane& lane) : pushed_(lane.context != nullptr) {
    if (pushed_) CHECK_CU(cuCtxPushCurrent(lane.context));
  }
  ~LaneContext() {
    if (!pushed_) return;
    CUcontext popped;
    CHECK_CU(cuCtxPopCurrent(&popped));
  }

 private:
  bool pushed_;
};

void queue_slow_write(const Lane& lane, CUdeviceptr a, size_t size, uintptr_t delay_us) {
  LaneContext current(lane);
  void* delay = reinterpret_cast<void*>(delay_us);
  switch (lane.kind) {
    case Lane::kPerThreadVariant:
      CHECK_CU(cuLaunchHostFunc_ptsz(nullptr, sleep_host, delay));
      CHECK_CU(cuMemsetD8Async_ptsz(a, kQueued, size, nullptr));
      return;
    case Lane::kTemporary: {
      CUstream stream;
      CHECK_CU(cuStreamCreate(&stream, lane.flags));
      CHECK_CU(cuLaunchHostFunc(stream, sleep_host, delay));
      CHECK_CU(cuMemsetD8Async(a, kQueued, size, stream));
      CHECK_CU(cuStreamDestroy(stream));  // the queued work still runs
      return;
    }
    case Lane::kStream:
      CHECK_CU(cuLaunchHostFunc(lane.stream, sleep_host, delay));
      CHECK_CU(cuMemsetD8Async(a, kQueued, size, lane.stream));
      return;
  }
}

void write_pattern(const Lane& lane, CUdeviceptr b, size_t size) {
  LaneContext current(lane);
  if (lane.context != nullptr) {
    // The reader below synchronizes only the round's own context.
    CHECK_CU(cuMemsetD8Async(b, kPattern, size, lane.stream));
    CHECK_CU(cuCtxSynchronize());
  } else if (lane.kind == Lane::kPerThreadVariant) {
    CHECK_CU(cuMemsetD8Async_ptsz(b, kPattern, size, nullptr));
  } else if (lane.stream == nullptr) {
    CHECK_CU(cuMemsetD8(b, kPattern, size));  // synchronous, in the legacy stream's order
  } else {
    CHECK_CU(cuMemsetD8Async(b, kPattern, size, lane.stream));
  }
}

struct Mode {
  std::vector<Lane> queues;   // the slow writes of the block's first owner
  std::vector<Lane> writers;  // the new owner's write
  int threads = 1;            // threads running rounds at once on the one context
  // Every other round above 1 MiB, where the pool reuses the freed block itself as soon as it
  // deems it fenced (best fit after a marker), rather than another free block.
  bool large_rounds = false;
};

size_t round_size(std::mt19937& random, bool repeating, bool large) {
  if (large) return (size_t{1} << 20) + 512 * (1 + random() % 4096);  // 1 .. 3 MiB
  if (repeating) return size_t{4096} << (2 * (random() % 4));         // 4 KiB .. 256 KiB
  return 512 * (1 + random() % 512);                                  // 512 B .. 256 KiB
}

int run_rounds(CUcontext context, const Mode& mode, int rounds, bool repeating, unsigned seed) {
  CHECK_CU(cuCtxSetCurrent(context));
  std::mt19937 random(seed);
  int corrupted = 0;
  for (int round = 0; round < rounds; ++round) {
    const Lane& queue = mode.queues[random() % mode.queues.size()];
    const Lane& writer = mode.writers[random() % mode.writers.size()];
    const size_t size = round_size(random, repeating, mode.large_rounds && round % 2 == 1);
    const uintptr_t delay_us = random() % 1500;
    CUdeviceptr a = 0;
    CHECK_CU(cuMemAlloc(&a, size));
    queue_slow_write(queue, a, size, delay_us);
    CHECK_CU(cuMemFree(a));
    CUdeviceptr b = 0;
    CHECK_CU(cuMemAlloc(&b, size));
    write_pattern(writer, b, size);
    CHECK_CU(cuCtxSynchronize());
    if (bytes_other_than(b, size, kPattern) > 0) ++corrupted;
    CHECK_CU(cuMemFree(b));
  }
  return corrupted;
}

CUstream make_stream(unsigned flags) {
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, flags));
  return stream;
}

// Another context of device 0 (cuCtxCreate leaves it current; run_rounds makes the round's
// context current again), with a blocking stream of its own.
std::vector<Lane> other_context_lanes() {
  CUcontext other;
  CHECK_CU(cuCtxCreate(&other, nullptr, 0, 0));
  const std::vector<Lane> lanes = {in_context(other, nullptr),
                                   in_context(other, make_stream(CU_STREAM_DEFAULT))};
  CUcontext popped;
  CHECK_CU(cuCtxPopCurrent(&popped));
  return lanes;
}

// Device 1's primary context (the program must run with two devices).
CUcontext other_device_context() {
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 1));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  return context;
}

// A stream of a green context on device 0: non-blocking, and the pool cannot record on it.
CUstream make_green_stream() {
  CUstream stream;
  CHECK_CU(cuGreenCtxStreamCreate(&stream, make_green_context(), CU_STREAM_NON_BLOCKING, 0));
  return stream;
}

// A non-blocking stream made through a stream-creating entry point the shim does not hook, found
// by dlsym (libunhooked_stream_creator.so must be preloaded after the shim).
CUstream make_unhooked_stream() {
  using Create = CUresult (*)(CUstream*, unsigned int);
  const auto create = reinterpret_cast<Create>(dlsym(RTLD_DEFAULT, "cuStreamCreate_v99"));
  CHECK_TRUE(create != nullptr);
  CUstream stream;
  CHECK_CU(create(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

// A non-blocking stream made by a helper preloaded after the shim (libnext_door_streams.so), which
// finds the driver's cuStreamCreate with dlsym(RTLD_NEXT, …) without wrapping it.
CUstream make_next_door_stream() {
  using Create = CUresult (*)(CUstream*, unsigned int);
  const auto create = reinterpret_cast<Create>(dlsym(RTLD_DEFAULT, "next_door_stream_create"));
  CHECK_TRUE(create != nullptr);
  CUstream stream;
  CHECK_CU(create(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

// A non-blocking stream made by a plugin linked with the driver and dlopen'ed with RTLD_DEEPBIND
// (libdeepbind_streams.so, its path in DEEPBIND_PLUGIN): its calls reach the driver past the hooks.
CUstream make_deepbind_stream() {
  const char* path = std::getenv("DEEPBIND_PLUGIN");
  CHECK_TRUE(path != nullptr);
  void* plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  CHECK_TRUE(plugin != nullptr);
  using Create = CUresult (*)(CUstream*, unsigned int);
  const auto create = reinterpret_cast<Create>(dlsym(plugin, "deepbind_stream_create"));
  CHECK_TRUE(create != nullptr);
  CUstream stream;
  CHECK_CU(create(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

// Modes are built after the context exists, since most create streams.
std::map<std::string, std::function<Mode()>> modes() {
  const Lane legacy = on(nullptr);
  const Lane per_thread = on(CU_STREAM_PER_THREAD);
  return {
      {"legacy",
       [=] {
         return Mode{{legacy}, {legacy}};
       }},
      {"nonblocking",
       [=] {
         return Mode{{on(make_stream(CU_STREAM_NON_BLOCKING))}, {legacy}};
       }},
      {"streams",
       [=] {
         std::vector<Lane> lanes = {legacy};
         for (int i = 0; i < 3; ++i) lanes.push_back(on(make_stream(CU_STREAM_NON_BLOCKING)));
         return Mode{lanes, lanes};
       }},
      {"threads",
       [=] {
         const Lane side = on(make_stream(CU_STREAM_NON_BLOCKING));
         return Mode{{side}, {legacy, side}, 2};
       }},
      {"per_thread",
       [=] {
         return Mode{{per_thread_variant()}, {legacy, on(make_stream(CU_STREAM_DEFAULT))}};
       }},
      {"per_thread_handle",
       [=] {
         return Mode{{per_thread}, {legacy, on(make_stream(CU_STREAM_DEFAULT))}};
       }},
      {"blocking_then_per_thread",
       [=] {
         return Mode{{on(make_stream(CU_STREAM_DEFAULT))}, {per_thread, legacy}};
       }},
      {"per_thread_threads",
       [=] {
         return Mode{{per_thread}, {per_thread}, 2};
       }},
      {"blocking_streams",
       [=] {
         const std::vector<Lane> lanes = {on(make_stream(CU_STREAM_DEFAULT)),
                                          on(make_stream(CU_STREAM_DEFAULT))};
         return Mode{lanes, {lanes[0], lanes[1], per_thread}};
       }},
      {"green",
       [=] {
         return Mode{{on(make_green_stream())}, {legacy, per_thread}};
       }},
      {"unhooked_creator",
       [=] {
         return Mode{{on(make_unhooked_stream())}, {legacy, per_thread}};
       }},
      {"next_door",
       [=] {
         return Mode{{on(make_next_door_stream())}, {legacy, per_thread}};
       }},
      {"deepbind",
       [=] {
         return Mode{{on(make_deepbind_stream())}, {legacy, per_thread}};
       }},
      {"destroyed_nonblocking",
       [=] {
         return Mode{{temporary(CU_STREAM_NON_BLOCKING)}, {legacy, per_thread}};
       }},
      {"other_context",
       [=] {
         const std::vector<Lane> other = other_context_lanes();
         return Mode{other, {legacy, per_thread, other[0]}, 1, true};
       }},
      {"other_device",
       [=] {
         return Mode{{legacy}, {in_context(other_device_context(), nullptr)}, 1, true};
       }},
      {"destroyed_blocking",
       [=] {
         return Mode{{temporary(CU_STREAM_DEFAULT)}, {on(make_stream(CU_STREAM_DEFAULT))}};
       }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "nonblocking";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  const bool repeating = argc > 3 && std::strcmp(argv[3], "repeating") == 0;
  const auto all = modes();
  const auto found = all.find(name);
  if (found == all.end()) {
    std::fprintf(stderr, "unknown mode %s\n", name.c_str());
    return 2;
  }
  CUcontext context = use_primary_context();
  const Mode mode = found->second();
  std::vector<int> corrupted(mode.threads, 0);
  std::vector<std::thread> others;
  for (int t = 1; t < mode.threads; ++t) {
    others.emplace_back(
        [&, t] { corrupted[t] = run_rounds(context, mode, rounds, repeating, 100 + t); });
  }
  corrupted[0] = run_rounds(context, mode, rounds, repeating, 1);
  for (std::thread& other : others) other.join();
  int total = 0;
  for (int count : corrupted) total += count;
  std::printf("corrupted rounds=%d\n", total);
  return total == 0 ? 0 : 1;
}
