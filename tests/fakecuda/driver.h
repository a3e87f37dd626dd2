// The simulated driver's state: devices, contexts, streams, events, captures and memory, behind one
// lock. The exported cu* functions (api_*.cc) are thin layers over the helpers declared here.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tests/fakecuda/stream.h"

namespace vramshim::fakecuda {

constexpr int kDriverVersion = 13000;
constexpr size_t kAllocationAlignment = 512;
constexpr size_t kVmmGranularity = size_t{2} << 20;

struct Context {
  uint64_t id = 0;  // new on every activation; keys the per-thread default streams
  int device = 0;
  unsigned flags = 0;
  bool primary = false;
  bool alive = false;
  int retains = 0;   // primary contexts only
  int attaches = 0;  // created contexts only: cuCtxAttach calls not yet detached
  std::shared_ptr<Stream> legacy;
  std::vector<std::shared_ptr<Stream>> streams;  // created streams and per-thread default streams
  std::vector<std::shared_ptr<Stream>> retired;  // destroyed streams that may still run queued work
};

enum class MemoryKind { Device, Pitched, Async, Managed, Host };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;  // bytes requested (pitch * height for pitched memory)
  size_t accounted =
      0;              // bytes counted against the device: size rounded up to kAllocationAlignment
  size_t mapped = 0;  // bytes of the host mapping behind it
  MemoryKind kind = MemoryKind::Device;
  Context* ctx = nullptr;
  int device = 0;
};

// A block of a stream-ordered pool that was freed at `freed_at`; reusable once that is reached, or
// at once by the stream that freed it.
struct FreeBlock {
  uintptr_t base = 0;
  size_t accounted = 0;
  size_t mapped = 0;
  Position freed_at;
};

struct MemPool {
  int device = 0;
  uint64_t release_threshold = 0;
  uint64_t reserved = 0;  // in-use and free blocks
  uint64_t used = 0;
  uint64_t reserved_high = 0;
  uint64_t used_high = 0;
  std::multimap<size_t, FreeBlock> free_blocks;  // by accounted size
};

struct Device {
  uint64_t capacity = 0;
  // Of the capacity, what "other processes" hold (FAKECUDA_OTHER_PROCESSES_BYTES): never this
  // process's to allocate or free, and not in live_bytes.
  uint64_t other_processes_bytes = 0;
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t live_allocations = 0;
  uint64_t teardown_freed_bytes = 0;
  uint64_t teardown_freed_allocations = 0;
  Context* primary = nullptr;
  MemPool* pool = nullptr;
};

// A VMM physical allocation (cuMemCreate): a memfd that mappings share.
struct Physical {
  int fd = -1;
  size_t size = 0;
  int device = 0;
  bool released = false;
  int mappings = 0;
};

struct Mapping {
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
  int device = 0;
  bool accessible = false;
};

struct Capture {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  bool invalidated = false;
  uint64_t operations = 0;
};

struct Graph {
  uint64_t operations = 0;
};

struct Event {
  Context* ctx = nullptr;
  unsigned flags = 0;
  Position recorded;  // empty until recorded (an empty position counts as reached)
};

struct Driver {
  std::mutex mu;
  // Written under mu, read without it by every call's requireInit (a real driver's check is a
  // load too, and the benchmarks time the shim, not this lock). On a cache line of their own:
  // beside mu, every lock one thread took made the other threads' next calls miss.
  alignas(64) std::atomic<bool> initialized{false};
  std::atomic<bool> forked_after_init{false};
  alignas(64) std::vector<Device> devices;
  // Contexts, pools and events are never freed, so that a stale handle can still be checked safely.
  std::unordered_set<Context*> contexts;
  std::unordered_set<MemPool*> pools;
  std::unordered_set<Event*> events;
  std::unordered_set<Graph*> graphs;
  std::unordered_map<Stream*, std::shared_ptr<Stream>>
      streams;  // live streams made by cuStreamCreate*
  std::unordered_map<Stream*, Capture> captures;
  std::map<uintptr_t, Allocation> allocations;
  std::map<CUmemGenericAllocationHandle, Physical> physicals;
  std::map<uintptr_t, size_t> reservations;
  std::map<uintptr_t, Mapping> mappings;
  uint64_t next_context_id = 1;
  CUmemGenericAllocationHandle next_physical = 0x1000;

  std::atomic<int> active_captures{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int> capture_invalidations{0};
};

// The process-wide state, made on first use (it reads the FAKECUDA_* environment then).
Driver& driver();

// Errors every call that needs an initialized driver checks first.
CUresult requireInit();
// The calling thread's current context, which must be alive.
CUresult currentContext(Context** out);
std::vector<Context*>& contextStack();
void activateContext(Driver& d, Context* c);  // under d.mu
// Waits for the context's work, destroys its streams and frees its memory ("freed by teardown").
void teardownContext(Context* c);
Context* findContext(Driver& d, CUcontext handle);  // under d.mu; null if never made

// Creates a stream of `flags` (0 or CU_STREAM_NON_BLOCKING) in context `c`.
CUresult createStream(Context* c, CUstream* phStream, unsigned int flags);
// Resolves a stream handle (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream). A zero
// handle means the per-thread default stream for the _ptsz/_ptds entry points.
CUresult resolveStream(CUstream handle, bool per_thread_default, std::shared_ptr<Stream>* out);
// Queues `op` with the legacy-stream ordering rules, or records it if the stream is capturing (then
// *at stays empty). `at` (optional) receives the position after the operation.
CUresult submit(const std::shared_ptr<Stream>& s, std::vector<Position> after,
                std::function<void()> op, Position* at = nullptr);
// Runs `op` in the stream's order and waits for it (the synchronous copies and sets).
CUresult submitAndWait(const std::shared_ptr<Stream>& s, std::function<void()> op);

// Stream capture: fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the captures
// concerned, when the calling thread may not make an unsafe call now.
CUresult prohibitUnsafeCall();
// Same for a call that acts on `s` itself (synchronize/query of a capturing stream).
CUresult prohibitOnCapturingStream(Stream* s);
void invalidateCapture(Driver& d, Capture& c);  // under d.mu
CUstreamCaptureMode& threadCaptureMode();

// Every stream position that must be reached to synchronize a context or a whole device.
std::vector<Position> contextTails(Driver& d, Context* c);  // under d.mu
std::vector<Position> deviceTails(Driver& d, int device);   // under d.mu
void waitAll(const std::vector<Position>& positions);
// After a synchronization: pools release free memory above their release threshold, as the real
// ones do.
void releasePoolsAboveThreshold(int device);

// Device memory accounting (under d.mu): false if `bytes` more would exceed the capacity left by
// other processes.
bool chargeDevice(Device& dev, uint64_t bytes);
// What this process could still allocate on the device (cuMemGetInfo's free), under d.mu.
uint64_t freeBytes(const Device& dev);
void creditDevice(Device& dev, uint64_t bytes);
// Anonymous, lazily backed host memory behind a simulated allocation; null on failure.
void* mapMemory(size_t bytes, bool below_4g = false);
size_t roundUp(size_t value, size_t multiple);
// The live allocation or accessible VMM mapping containing [addr, addr + bytes); false if none.
bool isAccessible(Driver& d, uintptr_t addr, size_t bytes);   // under d.mu
const Allocation* findAllocation(Driver& d, uintptr_t addr);  // under d.mu; any address inside it

// Stream-ordered pools (under d.mu).
CUresult poolAllocate(Driver& d, MemPool* pool, Context* ctx, const std::shared_ptr<Stream>& s,
                      size_t bytes, CUdeviceptr* out);
void poolTrim(Driver& d, MemPool* pool, uint64_t keep);

}  // namespace vramshim::fakecuda
