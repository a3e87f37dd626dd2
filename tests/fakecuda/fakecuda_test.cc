// Behaviour of the simulated driver that the shim's tests rely on.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/fakecuda/fakecuda_control.h"

namespace vramshim::fakecuda {
namespace {

constexpr uint64_t kDefaultCapacity = uint64_t{80} << 30;

// A host function that holds its stream until the test opens it: everything queued behind it waits.
class Gate {
 public:
  static void CUDA_CB hold(void* self) {
    auto* g = static_cast<Gate*>(self);
    std::unique_lock<std::mutex> lock(g->mu_);
    g->entered_ = true;
    g->cv_.notify_all();
    g->cv_.wait(lock, [&] { return g->open_; });
  }
  void waitEntered() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool open_ = false;
};

// Reads simulated device memory directly: device pointers are host addresses.
unsigned char byteAt(CUdeviceptr p) { return *reinterpret_cast<volatile unsigned char*>(p); }

class FakeCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    // Each test starts with an empty stream-ordered pool (pools outlive contexts).
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    ASSERT_EQ(fakecuda_live_bytes(0), 0u);
    fakecuda_reset_counters();
  }
  void TearDown() override {
    fakecuda_set_capacity(0, kDefaultCapacity);
    fakecuda_set_other_processes_bytes(0, 0);
    ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_live_bytes(0), fakecuda_pool_reserved_bytes(0));
    // A reset does not release the primary context: give back SetUp's retain.
    ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(cuMemAlloc_v2(&p, bytes), CUDA_SUCCESS);
    return p;
  }
  CUstream stream(unsigned flags) {
    CUstream s = nullptr;
    EXPECT_EQ(cuStreamCreate(&s, flags), CUDA_SUCCESS);
    return s;
  }
  CUcontext ctx_ = nullptr;
};

TEST_F(FakeCudaTest, DeviceMemoryIsWrittenAndReadThroughCopiesAndSets) {
  const CUdeviceptr p = alloc(4096);
  EXPECT_EQ(p % 512, 0u);
  EXPECT_EQ(cuMemsetD8_v2(p, 0x5a, 4096), CUDA_SUCCESS);
  std::vector<unsigned char> out(4096);
  EXPECT_EQ(cuMemcpyDtoH_v2(out.data(), p, out.size()), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0x5a);
  EXPECT_EQ(out[4095], 0x5a);
  const char text[] = "fakecuda";
  EXPECT_EQ(cuMemcpyHtoD_v2(p + 100, text, sizeof text), CUDA_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<const char*>(p + 100), "fakecuda");
  EXPECT_EQ(cuMemcpyHtoD_v2(p + 4000, text, 200), CUDA_ERROR_INVALID_VALUE)
      << "copy past the allocation";
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8_v2(p, 0, 1), CUDA_ERROR_INVALID_VALUE) << "set into freed memory";
}

TEST_F(FakeCudaTest, LegacyStreamWaitsForEarlierWorkOnBlockingStreams) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  CUstream blocking = stream(CU_STREAM_DEFAULT);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(blocking, Gate::hold, &gate), CUDA_SUCCESS);
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 7, 512, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(nullptr), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(byteAt(p), 0) << "legacy work ran before the blocking stream's earlier work";
  gate.open();
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 7);
  EXPECT_EQ(cuStreamDestroy_v2(blocking), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, BlockingStreamWaitsForEarlierLegacyWork) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  CUstream blocking = stream(CU_STREAM_DEFAULT);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, Gate::hold, &gate), CUDA_SUCCESS);
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 9, 512, blocking), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(blocking), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(byteAt(p), 0);
  gate.open();
  EXPECT_EQ(cuStreamSynchronize(blocking), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 9);
  cuStreamDestroy_v2(blocking);
}

TEST_F(FakeCudaTest, NonBlockingStreamsIgnoreTheLegacyStream) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  CUstream non_blocking = stream(CU_STREAM_NON_BLOCKING);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(nullptr, Gate::hold, &gate), CUDA_SUCCESS);
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 3, 512, non_blocking), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(non_blocking),
            CUDA_SUCCESS);  // would hang if ordered behind the gate
  EXPECT_EQ(byteAt(p), 3);
  EXPECT_EQ(cuStreamQuery(nullptr), CUDA_ERROR_NOT_READY);
  gate.open();
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  cuStreamDestroy_v2(non_blocking);
}

TEST_F(FakeCudaTest, PerThreadStreamWaitsForEarlierLegacyWork) {
  const CUdeviceptr p = alloc(1024);
  cuMemsetD8_v2(p, 0, 1024);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, Gate::hold, &gate), CUDA_SUCCESS);
  gate.waitEntered();
  // Through the _ptsz variant with stream 0, and through the handle on an ordinary entry point.
  ASSERT_EQ(cuMemsetD8Async_ptsz(p, 4, 512, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p + 512, 6, 512, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(byteAt(p), 0);
  EXPECT_EQ(byteAt(p + 512), 0);
  gate.open();
  EXPECT_EQ(cuStreamSynchronize_ptsz(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 4);
  EXPECT_EQ(byteAt(p + 512), 6);
}

TEST_F(FakeCudaTest, PerThreadStreamsOfTwoThreadsAreNotOrderedAgainstEachOther) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  Gate gate;
  std::thread other([&] {
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_PER_THREAD, Gate::hold, &gate), CUDA_SUCCESS);
  });
  other.join();
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 5, 512, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);  // would hang if ordered
  EXPECT_EQ(byteAt(p), 5);
  gate.open();
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, LegacyStreamWaitsForEarlierWorkOnEveryThreadsPerThreadStream) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  Gate gate;
  std::thread other([&] {
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_PER_THREAD, Gate::hold, &gate), CUDA_SUCCESS);
  });
  other.join();
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 8, 512, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(byteAt(p), 0) << "legacy work ran before another thread's per-thread stream's work";
  gate.open();
  EXPECT_EQ(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 8);
}

TEST_F(FakeCudaTest, GreenContextStreamsAreNonBlockingAndPrimaryContextSynchronizeWaitsForThem) {
  CUdevResource sms;
  ASSERT_EQ(cuDeviceGetDevResource(0, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(cuDevResourceGenerateDesc(&desc, &sms, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  CUstream s = nullptr;
  EXPECT_EQ(cuGreenCtxStreamCreate(&s, green, CU_STREAM_DEFAULT, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGreenCtxStreamCreate(&s, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  const CUdeviceptr p = alloc(512);  // primary-context memory, used by the green stream
  cuMemsetD8_v2(p, 0, 512);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, Gate::hold, &gate), CUDA_SUCCESS);
  gate.waitEntered();
  ASSERT_EQ(cuMemsetD8Async(p, 7, 512, s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);  // not held by the legacy stream
  EXPECT_EQ(byteAt(p), 7);
  gate.open();
  Gate second;
  ASSERT_EQ(cuLaunchHostFunc(s, Gate::hold, &second), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p, 9, 512, s), CUDA_SUCCESS);
  std::thread opener([&] {
    second.waitEntered();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    second.open();
  });
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 9) << "the primary context's synchronize returned before the green stream";
  opener.join();
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  EXPECT_EQ(cuGreenCtxDestroy(green), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, TwoBlockingStreamsAreNotOrderedAgainstEachOther) {
  const CUdeviceptr p = alloc(512);
  CUstream a = stream(CU_STREAM_DEFAULT);
  CUstream b = stream(CU_STREAM_DEFAULT);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(a, Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p, 5, 512, b), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(b), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 5);
  gate.open();
  EXPECT_EQ(cuStreamSynchronize(a), CUDA_SUCCESS);
  cuStreamDestroy_v2(a);
  cuStreamDestroy_v2(b);
}

TEST_F(FakeCudaTest, EventsCompleteWhenTheStreamReachesThem) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  CUstream producer = stream(CU_STREAM_NON_BLOCKING);
  CUstream consumer = stream(CU_STREAM_NON_BLOCKING);
  CUevent never_recorded, done;
  ASSERT_EQ(cuEventCreate(&never_recorded, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(never_recorded), CUDA_SUCCESS);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(producer, Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(done, producer), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(consumer, done, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p, 1, 512, consumer), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuStreamQuery(consumer), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(byteAt(p), 0) << "the consumer did not wait for the event";
  gate.open();
  EXPECT_EQ(cuEventSynchronize(done), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(done), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(consumer), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 1);
  EXPECT_EQ(cuEventDestroy_v2(done), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(never_recorded), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(done), CUDA_ERROR_INVALID_HANDLE);
  cuStreamDestroy_v2(producer);
  cuStreamDestroy_v2(consumer);
}

// The pool's legacy-stream marker: reached at once when nothing is queued before it, but never
// ahead of work the legacy stream is ordered after (a blocking stream's, here).
TEST_F(FakeCudaTest, ARecordOnAnIdleStreamIsReachedAtOnceButNotAheadOfWorkItIsOrderedAfter) {
  CUevent marker;
  ASSERT_EQ(cuEventCreate(&marker, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(marker, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(marker), CUDA_SUCCESS);

  CUstream blocking = stream(CU_STREAM_DEFAULT);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(blocking, Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(marker, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(marker), CUDA_ERROR_NOT_READY);
  gate.open();
  EXPECT_EQ(cuEventSynchronize(marker), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy_v2(marker), CUDA_SUCCESS);
  cuStreamDestroy_v2(blocking);
}

TEST_F(FakeCudaTest, MemFreeWaitsForAllWorkOnTheDevice) {
  const CUdeviceptr victim = alloc(512);
  const CUdeviceptr other = alloc(512);
  cuMemsetD8_v2(other, 0, 512);
  CUstream s = stream(CU_STREAM_NON_BLOCKING);
  Gate gate;
  ASSERT_EQ(cuLaunchHostFunc(s, Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(other, 2, 512, s), CUDA_SUCCESS);
  gate.waitEntered();
  std::atomic<bool> freed{false};
  std::thread freer([&] {
    cuCtxSetCurrent(ctx_);
    EXPECT_EQ(cuMemFree_v2(victim), CUDA_SUCCESS);
    freed = true;
  });
  std::this_thread::sleep_for(
      std::chrono::milliseconds(50));  // give a wrong free the chance to return
  EXPECT_FALSE(freed.load()) << "cuMemFree returned while work was queued on another stream";
  gate.open();
  freer.join();
  EXPECT_EQ(byteAt(other), 2) << "cuMemFree returned before the queued memset ran";
  cuStreamDestroy_v2(s);
}

TEST_F(FakeCudaTest, InvalidFreesAreRejectedAndCounted) {
  const CUdeviceptr p = alloc(1000);
  EXPECT_EQ(fakecuda_live_bytes(0), 1024u);
  EXPECT_EQ(fakecuda_live_allocations(0), 1u);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree_v2(0x1234000), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fakecuda_errors(), 2u);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  EXPECT_EQ(fakecuda_peak_bytes(0), 1024u);
}

TEST_F(FakeCudaTest, UnsafeCallDuringGlobalCaptureInvalidatesIt) {
  const CUdeviceptr p = alloc(512);
  cuMemsetD8_v2(p, 0, 512);
  CUstream s = stream(CU_STREAM_NON_BLOCKING);
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p, 8, 512, s), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(cuMemAlloc_v2(&q, 512), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureStatus status;
  ASSERT_EQ(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph graph = reinterpret_cast<CUgraph>(0x1);
  EXPECT_EQ(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(fakecuda_capture_invalidations(), 1);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(byteAt(p), 0) << "captured work must be recorded, not executed";
  cuStreamDestroy_v2(s);
}

TEST_F(FakeCudaTest, CaptureModesDecideWhichCallsAreUnsafe) {
  CUstream s = stream(CU_STREAM_NON_BLOCKING);
  CUevent e;
  ASSERT_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);

  // A valid capture ends with a graph.
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
  // RELAXED exempts this thread.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 512), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  // Another thread in GLOBAL mode may not make unsafe calls either.
  std::thread other([&] {
    cuCtxSetCurrent(ctx_);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  });
  other.join();
  CUgraph graph = nullptr;
  EXPECT_EQ(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // A THREAD_LOCAL capture ignores other threads.
  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  std::thread unaffected([&] {
    cuCtxSetCurrent(ctx_);
    EXPECT_EQ(cuEventQuery(e), CUDA_SUCCESS);
  });
  unaffected.join();
  EXPECT_EQ(cuEventQuery(e), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  ASSERT_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(
                s, [](void*) {}, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  EXPECT_NE(graph, nullptr);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_capture_invalidations(), 2);
  EXPECT_EQ(cuStreamBeginCapture_v2(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      << "the legacy stream cannot be captured";
  cuEventDestroy_v2(e);
  cuStreamDestroy_v2(s);
}

TEST_F(FakeCudaTest, AllocationsBeyondCapacityFailWithOutOfMemory) {
  constexpr size_t kMiB = size_t{1} << 20;
  fakecuda_set_capacity(0, 64 * kMiB);
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, 64 * kMiB);
  EXPECT_EQ(free_bytes, 64 * kMiB);
  size_t device_total = 0;
  EXPECT_EQ(cuDeviceTotalMem_v2(&device_total, 0), CUDA_SUCCESS);
  EXPECT_EQ(device_total, 64 * kMiB);

  const CUdeviceptr big = alloc(48 * kMiB);
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 16 * kMiB);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 32 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  size_t pitch = 0;
  EXPECT_EQ(cuMemAllocPitch_v2(&p, &pitch, 4096, 8192, 4), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAllocAsync(&p, 32 * kMiB, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 32 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemFree_v2(big), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&p, 32 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, MemoryOtherProcessesHoldIsNotFreeNorAllocatable) {
  constexpr size_t kMiB = size_t{1} << 20;
  fakecuda_set_capacity(0, 64 * kMiB);
  fakecuda_set_other_processes_bytes(0, 40 * kMiB);
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, 64 * kMiB);
  EXPECT_EQ(free_bytes, 24 * kMiB);
  size_t device_total = 0;
  EXPECT_EQ(cuDeviceTotalMem_v2(&device_total, 0), CUDA_SUCCESS);
  EXPECT_EQ(device_total, 64 * kMiB);

  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 32 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAllocAsync(&p, 32 * kMiB, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  const CUdeviceptr fits = alloc(16 * kMiB);
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 8 * kMiB);
  EXPECT_EQ(fakecuda_live_bytes(0), 16 * kMiB) << "other processes' bytes are not this process's";

  fakecuda_set_other_processes_bytes(0, 80 * kMiB);
  ASSERT_EQ(cuMemGetInfo_v2(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_bytes, 0u) << "more held elsewhere than the capacity leaves nothing free";
  EXPECT_EQ(cuMemAlloc_v2(&p, 512), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemFree_v2(fits), CUDA_SUCCESS);
}

TEST(FakeCudaEnvironmentTest, OtherProcessesBytesComeFromTheEnvironment) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  // A fresh process reads the variable when the simulator starts.
  EXPECT_EXIT(
      {
        ::setenv("FAKECUDA_CAPACITY", "1G", 1);
        ::setenv("FAKECUDA_OTHER_PROCESSES_BYTES", "768M", 1);
        cuInit(0);
        CUcontext ctx;
        cuDevicePrimaryCtxRetain(&ctx, 0);
        cuCtxSetCurrent(ctx);
        size_t free_bytes = 0;
        size_t total = 0;
        cuMemGetInfo_v2(&free_bytes, &total);
        CUdeviceptr p = 0;
        const bool refused = cuMemAlloc_v2(&p, size_t{300} << 20) == CUDA_ERROR_OUT_OF_MEMORY;
        std::exit(total == size_t{1} << 30 && free_bytes == size_t{256} << 20 && refused ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(FakeCudaEnvironmentTest, DevicesHaveTheBusIdsOfAnEightGpuBoardPerDomain) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        ::setenv("FAKECUDA_DEVICES", "9", 1);
        cuInit(0);
        char second[16] = {};
        char ninth[16] = {};
        cuDeviceGetPCIBusId(second, sizeof second, 1);
        cuDeviceGetPCIBusId(ninth, sizeof ninth, 8);
        int domain = -1;
        cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 8);
        const bool as_on_the_board = std::strcmp(second, "0000:2A:00.0") == 0 &&
                                     std::strcmp(ninth, "0001:18:00.0") == 0 && domain == 1;
        std::exit(as_on_the_board ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(FakeCudaTest, PitchedAndLegacyAllocations) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch_v2(&p, &pitch, 1000, 3, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  size_t range = 0;
  EXPECT_EQ(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 10), CUDA_SUCCESS);
  EXPECT_EQ(range, 3072u);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  CUdeviceptr_v1 small = 0;
  ASSERT_EQ(cuMemAlloc(&small, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8_v2(small, 1, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(small), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_calls("cuMemAlloc"), 1u);
  EXPECT_EQ(fakecuda_calls("cuMemFree"), 1u);
  EXPECT_EQ(fakecuda_calls("cuMemFree_v2"), 1u);
}

TEST_F(FakeCudaTest, PointerAttributesDescribeAllocations) {
  const CUdeviceptr p = alloc(4096);
  CUcontext owner = nullptr;
  EXPECT_EQ(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p + 1), CUDA_SUCCESS);
  EXPECT_EQ(owner, ctx_);
  unsigned int type = 0;
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
  CUdeviceptr start = 0;
  EXPECT_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(start, p);
  CUdeviceptr dp = 0;
  EXPECT_EQ(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p + 8), CUDA_SUCCESS);
  EXPECT_EQ(dp, p + 8);
  void* host = nullptr;
  ASSERT_EQ(cuMemAllocHost_v2(&host, 100), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  reinterpret_cast<CUdeviceptr>(host)),
            CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(fakecuda_live_bytes(0), 4096u) << "host memory is not device memory";
  EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeCudaTest, StreamOrderedPoolKeepsFreedMemoryUntilTrimmed) {
  constexpr size_t kBytes = size_t{1} << 20;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  cuuint64_t keep_all = ~cuuint64_t{0};
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all),
            CUDA_SUCCESS);
  CUstream s = stream(CU_STREAM_NON_BLOCKING);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, kBytes, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(p, 1, kBytes, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(p, s), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), kBytes) << "freed pool memory stays reserved";
  CUdeviceptr again = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&again, kBytes, pool, s), CUDA_SUCCESS);
  EXPECT_EQ(again, p) << "the same stream reuses its freed block";
  ASSERT_EQ(cuMemFreeAsync(again, s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync(again, s), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_pool_reserved_bytes(0), kBytes);
  EXPECT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  EXPECT_EQ(fakecuda_live_allocations(0), 0u);

  // With the default threshold (0), a synchronization releases the pool's free memory, as the real
  // one does.
  cuuint64_t zero = 0;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync_ptsz(&p, kBytes, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync_ptsz(p, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), kBytes);
  ASSERT_EQ(cuStreamSynchronize_ptsz(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  EXPECT_EQ(fakecuda_calls("cuMemAllocAsync_ptsz"), 1u);
  EXPECT_EQ(fakecuda_calls("cuMemAllocAsync"), 1u);
  cuStreamDestroy_v2(s);
}

TEST_F(FakeCudaTest, PoolDoesNotHandOutBlocksOtherStreamsMayStillUse) {
  constexpr size_t kBytes = 4096;
  CUstream a = stream(CU_STREAM_NON_BLOCKING);
  CUstream b = stream(CU_STREAM_NON_BLOCKING);
  Gate gate;
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, kBytes, a), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(a, Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(p, a), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  ASSERT_EQ(cuMemAllocAsync(&q, kBytes, b), CUDA_SUCCESS);
  EXPECT_NE(q, p) << "the free on stream a has not been reached yet";
  gate.open();
  ASSERT_EQ(cuStreamSynchronize(a), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(q, b), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(b), CUDA_SUCCESS);
  cuStreamDestroy_v2(a);
  cuStreamDestroy_v2(b);
}

TEST_F(FakeCudaTest, VmmMappingsShareTheirPhysicalMemory) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, size_t{2} << 20);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, granularity + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemCreate(&h, granularity, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), granularity);
  CUdeviceptr va = 0;
  ASSERT_EQ(cuMemAddressReserve(&va, 2 * granularity, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % granularity, 0u);
  ASSERT_EQ(cuMemMap(va, granularity, 0, h, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(va + granularity, granularity, 0, h, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8_v2(va, 1, 16), CUDA_ERROR_INVALID_VALUE)
      << "no access before cuMemSetAccess";
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(cuMemSetAccess(va, 2 * granularity, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(va + 100, 0x42, 16), CUDA_SUCCESS);
  unsigned char out[16] = {};
  ASSERT_EQ(cuMemcpyDtoH_v2(out, va + granularity + 100, sizeof out), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0x42) << "both mappings show the same physical memory";
  EXPECT_EQ(out[15], 0x42);
  EXPECT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), granularity) << "released but still mapped";
  EXPECT_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemUnmap(va, 2 * granularity), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  EXPECT_EQ(cuMemAddressFree(va, 2 * granularity), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, GetProcAddressAnswersByVersionAndFlags) {
  auto exported = [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
  auto lookup = [](const char* name, int version, cuuint64_t flags) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = cuGetProcAddress_v2(name, &fn, version, flags, &status);
    EXPECT_EQ(r == CUDA_SUCCESS, status == CU_GET_PROC_ADDRESS_SUCCESS) << name;
    return r == CUDA_SUCCESS ? fn : nullptr;
  };
  constexpr cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(lookup("cuMemAlloc", 3020, 0), exported("cuMemAlloc_v2"));
  EXPECT_EQ(lookup("cuMemAlloc", 2000, 0), exported("cuMemAlloc"));
  EXPECT_EQ(lookup("cuMemAlloc", 13000, kPtds), exported("cuMemAlloc_v2"))
      << "no per-thread variant";
  EXPECT_EQ(lookup("cuMemAllocAsync", 11020, 0), exported("cuMemAllocAsync"));
  EXPECT_EQ(lookup("cuMemAllocAsync", 11020, kPtds), exported("cuMemAllocAsync_ptsz"));
  EXPECT_EQ(lookup("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            exported("cuMemAllocAsync"));
  EXPECT_EQ(lookup("cuMemcpyHtoD", 12000, kPtds), exported("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(lookup("cuMemcpyHtoDAsync", 12000, kPtds), exported("cuMemcpyHtoDAsync_v2_ptsz"));
  EXPECT_EQ(lookup("cuMemsetD8Async", 12000, kPtds), exported("cuMemsetD8Async_ptsz"));
  EXPECT_EQ(lookup("cuStreamBeginCapture", 10000, 0), exported("cuStreamBeginCapture"));
  EXPECT_EQ(lookup("cuStreamBeginCapture", 12000, kPtds), exported("cuStreamBeginCapture_v2_ptsz"));
  EXPECT_EQ(lookup("cuCtxCreate", 12000, 0), exported("cuCtxCreate_v3"));
  EXPECT_EQ(lookup("cuCtxCreate", 13000, 0), exported("cuCtxCreate_v4"));
  EXPECT_EQ(lookup("cuGetProcAddress", 11030, 0), exported("cuGetProcAddress"));
  EXPECT_EQ(lookup("cuGetProcAddress", 12000, 0), exported("cuGetProcAddress_v2"));
  EXPECT_NE(exported("cuMemAlloc"), exported("cuMemAlloc_v2"));

  void* fn = reinterpret_cast<void*>(0x1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(cuGetProcAddress_v2("cuNoSuchFunction", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 13000, 0, nullptr), CUDA_SUCCESS)
      << "status may be NULL";

  // The v1 entry point (4 arguments) answers the same way, and what it returns is what gets called.
  using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto v1 = reinterpret_cast<GetProcV1>(lookup("cuGetProcAddress", 11030, 0));
  ASSERT_NE(v1, nullptr);
  void* alloc_async = nullptr;
  ASSERT_EQ(v1("cuMemAllocAsync", &alloc_async, 11020, kPtds), CUDA_SUCCESS);
  using AllocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
  CUdeviceptr p = 0;
  ASSERT_EQ(reinterpret_cast<AllocAsync>(alloc_async)(&p, 512, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_calls("cuMemAllocAsync_ptsz"), 1u);
  EXPECT_EQ(fakecuda_calls("cuMemAllocAsync"), 0u);
  EXPECT_EQ(fakecuda_calls("cuGetProcAddress"), 1u);
  EXPECT_EQ(cuMemFreeAsync_ptsz(p, nullptr), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, DestroyingAContextFreesItsMemory) {
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&created, 0, 0), CUDA_SUCCESS);
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  alloc(1 << 20);
  alloc(512);
  CUstream s = stream(CU_STREAM_DEFAULT);
  EXPECT_EQ(fakecuda_live_bytes(0), (1u << 20) + 512);
  ASSERT_EQ(cuCtxDestroy_v2(created), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  EXPECT_EQ(fakecuda_teardown_freed_bytes(0), (1u << 20) + 512);
  EXPECT_EQ(fakecuda_teardown_freed_allocations(0), 2u);
  EXPECT_EQ(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE) << "streams die with their context";
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx_) << "the destroyed context was popped";

  // The primary context: the last release tears it down.
  alloc(4096);
  CUcontext again = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
  EXPECT_EQ(again, ctx_);
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 4096u) << "still retained once";
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), 0u);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 512), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);  // for TearDown's reset
}

TEST_F(FakeCudaTest, ContextStackPushesAndPops) {
  CUcontext created = nullptr;
  ASSERT_EQ(cuCtxCreate_v4(&created, nullptr, 0, 0), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(cuCtxPushCurrent_v2(created), CUDA_SUCCESS);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy_v2(created), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy_v2(created), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(FakeCudaTest, DeviceQueriesAndErrorStrings) {
  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  int count = 0;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_NE(std::strstr(name, "H200"), nullptr);
  int major = 0;
  EXPECT_EQ(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  char bus_id[16];
  EXPECT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 0), CUDA_SUCCESS);
  EXPECT_STREQ(bus_id, "0000:18:00.0");
  int bus = 0;
  EXPECT_EQ(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0), CUDA_SUCCESS);
  EXPECT_EQ(bus, 0x18);
  EXPECT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetPCIBusId(nullptr, 16, 0), CUDA_ERROR_INVALID_VALUE);
  const char* text = nullptr;
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuGetErrorString(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, &text), CUDA_SUCCESS);
  EXPECT_NE(std::strstr(text, "capture"), nullptr);
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(12345), &text), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeCudaTest, EightThreadsAtOnce) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cuCtxSetCurrent(ctx_);
      CUstream s = nullptr;
      cuStreamCreate(&s, t % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
      for (int i = 0; i < kRounds; ++i) {
        const size_t bytes = 512 * (1 + (i + t) % 7);
        CUdeviceptr p = 0, q = 0;
        if (cuMemAlloc_v2(&p, bytes) != CUDA_SUCCESS) ++mismatches;
        if (cuMemAllocAsync(&q, bytes, s) != CUDA_SUCCESS) ++mismatches;
        cuMemsetD8Async(p, static_cast<unsigned char>(t + i), bytes, s);
        cuMemcpyDtoDAsync_v2(q, p, bytes, s);
        std::vector<unsigned char> out(bytes);
        cuMemcpyDtoHAsync_v2(out.data(), q, bytes, s);
        cuStreamSynchronize(s);
        if (out[bytes - 1] != static_cast<unsigned char>(t + i)) ++mismatches;
        cuMemFreeAsync(q, s);
        if (cuMemFree_v2(p) != CUDA_SUCCESS) ++mismatches;
      }
      cuStreamDestroy_v2(s);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(fakecuda_calls("cuMemAlloc_v2"), uint64_t{kThreads * kRounds});
  EXPECT_EQ(fakecuda_calls("cuMemFree_v2"), uint64_t{kThreads * kRounds});
  EXPECT_EQ(fakecuda_calls("cuMemAllocAsync"), uint64_t{kThreads * kRounds});
  EXPECT_EQ(fakecuda_errors(), 0u);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_live_bytes(0), fakecuda_pool_reserved_bytes(0)) << "only pool reserve is left";
}

TEST(FakeCudaExitTest, ProcessExitsWithWorkStillQueued) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        cuInit(0);
        CUcontext ctx;
        cuDevicePrimaryCtxRetain(&ctx, 0);
        cuCtxSetCurrent(ctx);
        auto* never_opened =
            new Gate;  // leaked: the stuck worker still uses it while the process exits
        cuLaunchHostFunc(nullptr, Gate::hold, never_opened);
        never_opened
            ->waitEntered();  // a worker is stuck in user code, and more work is queued behind it
        CUdeviceptr p = 0;
        cuMemAlloc_v2(&p, 512);
        cuMemsetD8Async(p, 1, 512, nullptr);
        std::exit(3);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace vramshim::fakecuda
