// One contract for every DeviceApi: the in-process fake the pool's tests run on, and the shim's
// DriverDeviceApi over the simulated driver (tests/fakecuda), behave alike where the pool relies
// on them. A test here that passes on one and fails on the other means the pool's unit tests
// prove less than they seem to.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "shim/intercept/hook_declarations.h"
#include "shim/pool/device_api.h"
#include "shim/runtime/driver_device_api.h"
#include "tests/fakecuda/fakecuda_control.h"
#include "tests/unit/pool/fake_device_api.h"

namespace vramshim::pool {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Each implementation under the contract: its DeviceApi, and what the contract needs to set up
// and observe that DeviceApi does not offer. Each starts with its context not current.
class FakeDevice {
 public:
  DeviceApi& api() { return fake_; }
  // Allocations past `bytes` in use fail with CUDA_ERROR_OUT_OF_MEMORY.
  void set_capacity(uint64_t bytes) { fake_.set_capacity(bytes); }
  bool context_is_current() const {
    const testing::FakeDeviceApi::Counters counters = fake_.counters();
    return counters.push > counters.pop;
  }
  // Queues work on the legacy stream that does not finish until release_legacy_stream().
  void hold_legacy_stream() { fake_.queue_work(CU_STREAM_LEGACY); }
  void release_legacy_stream() { fake_.finish_work(CU_STREAM_LEGACY); }

  // Another context of the device, with work on its legacy stream that does not finish until
  // release_other_context().
  CUcontext other_context() { return kOther; }
  void hold_other_context() {
    fake_.make_other_context_stream(kOtherStream, kOther);
    fake_.queue_work(kOtherStream, kOtherWrite, 1);
  }
  void release_other_context() { fake_.finish_work(kOtherStream); }
  bool other_context_work_done() const { return !fake_.has_unfinished_write(kOtherWrite, 1); }
  void destroy_other_context() {}

 private:
  static inline const CUcontext kOther = reinterpret_cast<CUcontext>(0x7);
  static inline const CUstream kOtherStream = reinterpret_cast<CUstream>(0x70);
  static constexpr CUdeviceptr kOtherWrite = 0x1000;
  testing::FakeDeviceApi fake_;
};

class SimulatedDriverDevice {
 public:
  SimulatedDriverDevice() {
    // Only entry points the shim does not hook are called by name; the hooked ones through real::,
    // so that no hook starts the shim's runtime inside the test.
    EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
    EXPECT_EQ(cuDeviceGet(&device_, 0), CUDA_SUCCESS);
    EXPECT_EQ(real::cuDeviceTotalMem_v2(&capacity_, device_), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxCreate_v2(&context_, 0, device_), CUDA_SUCCESS);
    CUcontext popped = nullptr;  // a created context is current; the contract starts without it
    EXPECT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    api_.emplace(context_, device_, trace_, capture_);
  }
  ~SimulatedDriverDevice() {
    release_legacy_stream();  // the context's teardown waits for its work
    release_other_context();
    destroy_other_context();
    fakecuda_set_capacity(device_, capacity_);
    real::cuCtxDestroy_v2(context_);
  }

  DeviceApi& api() { return *api_; }
  void set_capacity(uint64_t bytes) { fakecuda_set_capacity(device_, bytes); }
  bool context_is_current() const {
    CUcontext current = nullptr;
    return cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_;
  }
  void hold_legacy_stream() {
    held_.store(true);
    ScopedCurrentContext current(*api_);
    ASSERT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, &wait_while_held, &held_), CUDA_SUCCESS);
  }
  void release_legacy_stream() { held_.store(false); }

  CUcontext other_context() {
    if (other_ == nullptr) {
      EXPECT_EQ(real::cuCtxCreate_v2(&other_, 0, device_), CUDA_SUCCESS);
      CUcontext popped = nullptr;
      EXPECT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    }
    return other_;
  }
  void hold_other_context() {
    other_held_.store(true);
    other_done_.store(false);
    EXPECT_EQ(cuCtxPushCurrent_v2(other_context()), CUDA_SUCCESS);
    EXPECT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, &wait_while_held, &other_held_), CUDA_SUCCESS);
    EXPECT_EQ(cuLaunchHostFunc(CU_STREAM_LEGACY, &mark_done, &other_done_), CUDA_SUCCESS);
    CUcontext popped = nullptr;
    EXPECT_EQ(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
  }
  void release_other_context() { other_held_.store(false); }
  bool other_context_work_done() const { return other_done_.load(); }
  void destroy_other_context() {
    if (other_ != nullptr) real::cuCtxDestroy_v2(other_);
    other_ = nullptr;
  }

 private:
  static void CUDA_CB wait_while_held(void* held) {
    while (static_cast<std::atomic<bool>*>(held)->load()) std::this_thread::yield();
  }
  static void CUDA_CB mark_done(void* done) { static_cast<std::atomic<bool>*>(done)->store(true); }

  CUdevice device_ = 0;
  size_t capacity_ = 0;
  CUcontext context_ = nullptr;
  attribution::EventTrace trace_{0};  // off: the contract is the driver's
  CaptureState capture_;
  std::optional<runtime::DriverDeviceApi> api_;
  std::atomic<bool> held_{false};
  CUcontext other_ = nullptr;
  std::atomic<bool> other_held_{false};
  std::atomic<bool> other_done_{false};
};

template <typename Device>
class DeviceApiContractTest : public ::testing::Test {
 protected:
  DeviceApi& api() { return device_.api(); }

  Device device_;
};

class DeviceName {
 public:
  template <typename Device>
  static std::string GetName(int) {
    return std::is_same_v<Device, FakeDevice> ? "FakeDeviceApi" : "DriverDeviceApi";
  }
};

using Devices = ::testing::Types<FakeDevice, SimulatedDriverDevice>;
TYPED_TEST_SUITE(DeviceApiContractTest, Devices, DeviceName);

// CUDA_ERROR_NOT_READY until it completes (or `timeout` passes), then the query's answer: an event
// completes without anyone waiting for it, which the pool's polling relies on.
CUresult query_until_complete(DeviceApi& api, CUevent event,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  CUresult result = api.query_event(event);
  while (result == CUDA_ERROR_NOT_READY && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    result = api.query_event(event);
  }
  return result;
}

TYPED_TEST(DeviceApiContractTest, AllocateGivesDistinctNonNullPointers) {
  ScopedCurrentContext current(this->api());
  std::set<CUdeviceptr> pointers;
  for (int i = 0; i < 4; ++i) {
    CUdeviceptr ptr = 0;
    ASSERT_EQ(this->api().allocate(kMiB, &ptr), CUDA_SUCCESS);
    EXPECT_NE(ptr, 0u);
    EXPECT_TRUE(pointers.insert(ptr).second) << "handed out twice: " << ptr;
  }
  for (CUdeviceptr ptr : pointers) EXPECT_EQ(this->api().free(ptr), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, AllocateOfNothingIsInvalid) {
  ScopedCurrentContext current(this->api());
  CUdeviceptr ptr = 0;
  EXPECT_EQ(this->api().allocate(0, &ptr), CUDA_ERROR_INVALID_VALUE);
}

TYPED_TEST(DeviceApiContractTest, FreeOfALivePointerSucceedsAndOfAFreedOneFails) {
  ScopedCurrentContext current(this->api());
  CUdeviceptr ptr = 0;
  ASSERT_EQ(this->api().allocate(kMiB, &ptr), CUDA_SUCCESS);
  EXPECT_EQ(this->api().free(ptr), CUDA_SUCCESS);
  EXPECT_EQ(this->api().free(ptr), CUDA_ERROR_INVALID_VALUE);
}

TYPED_TEST(DeviceApiContractTest, AllocateBeyondTheCapacityIsOutOfMemoryUntilMemoryIsFreed) {
  ScopedCurrentContext current(this->api());
  this->device_.set_capacity(64 * kMiB);
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(this->api().allocate(48 * kMiB, &first), CUDA_SUCCESS);
  EXPECT_EQ(this->api().allocate(32 * kMiB, &second), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(this->api().allocate(16 * kMiB, &second), CUDA_SUCCESS);  // exactly the capacity
  EXPECT_EQ(this->api().free(second), CUDA_SUCCESS);
  EXPECT_EQ(this->api().free(first), CUDA_SUCCESS);
  EXPECT_EQ(this->api().allocate(64 * kMiB, &first), CUDA_SUCCESS);
  EXPECT_EQ(this->api().free(first), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, EventsAreDistinctAndDestroyable) {
  ScopedCurrentContext current(this->api());
  CUevent first = nullptr, second = nullptr;
  ASSERT_EQ(this->api().create_event(&first), CUDA_SUCCESS);
  ASSERT_EQ(this->api().create_event(&second), CUDA_SUCCESS);
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  EXPECT_EQ(this->api().destroy_event(first), CUDA_SUCCESS);
  EXPECT_EQ(this->api().destroy_event(second), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, AnEventRecordedWithNoWorkQueuedCompletes) {
  ScopedCurrentContext current(this->api());
  CUevent event = nullptr;
  ASSERT_EQ(this->api().create_event(&event), CUDA_SUCCESS);
  ASSERT_EQ(this->api().record_event(event, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(query_until_complete(this->api(), event), CUDA_SUCCESS);
  EXPECT_EQ(this->api().synchronize_event(event), CUDA_SUCCESS);
  EXPECT_EQ(this->api().query_event(event), CUDA_SUCCESS);
  EXPECT_EQ(this->api().destroy_event(event), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, AnEventBehindUnfinishedWorkIsNotReadyUntilTheWorkFinishes) {
  ScopedCurrentContext current(this->api());
  CUevent event = nullptr;
  ASSERT_EQ(this->api().create_event(&event), CUDA_SUCCESS);
  this->device_.hold_legacy_stream();
  ASSERT_EQ(this->api().record_event(event, CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(query_until_complete(this->api(), event, std::chrono::milliseconds(50)),
            CUDA_ERROR_NOT_READY);
  this->device_.release_legacy_stream();
  EXPECT_EQ(this->api().synchronize_event(event), CUDA_SUCCESS);
  EXPECT_EQ(this->api().query_event(event), CUDA_SUCCESS);
  EXPECT_EQ(this->api().destroy_event(event), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, SynchronizeContextReturnsOnceEarlierWorkFinished) {
  ScopedCurrentContext current(this->api());
  EXPECT_EQ(this->api().synchronize_context(), CUDA_SUCCESS);
  CUevent event = nullptr;
  ASSERT_EQ(this->api().create_event(&event), CUDA_SUCCESS);
  this->device_.hold_legacy_stream();
  ASSERT_EQ(this->api().record_event(event, CU_STREAM_LEGACY), CUDA_SUCCESS);
  // The driver's synchronize waits for the work, the fake's finishes it: either way, done after.
  std::thread releaser([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    this->device_.release_legacy_stream();
  });
  EXPECT_EQ(this->api().synchronize_context(), CUDA_SUCCESS);
  EXPECT_EQ(this->api().query_event(event), CUDA_SUCCESS);
  releaser.join();
  EXPECT_EQ(this->api().destroy_event(event), CUDA_SUCCESS);
}

TYPED_TEST(DeviceApiContractTest, SynchronizeOtherContextWaitsForItsWorkAndKeepsTheCurrentOne) {
  ScopedCurrentContext current(this->api());
  const CUcontext other = this->device_.other_context();
  this->device_.hold_other_context();
  std::thread releaser([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    this->device_.release_other_context();
  });
  EXPECT_EQ(this->api().synchronize_other_context(other), CUDA_SUCCESS);
  EXPECT_TRUE(this->device_.other_context_work_done());
  EXPECT_TRUE(this->device_.context_is_current());
  releaser.join();
}

// The pool may hear of a context's destruction late: a context that is gone runs no more work.
TYPED_TEST(DeviceApiContractTest, SynchronizeOfADestroyedOtherContextSucceeds) {
  ScopedCurrentContext current(this->api());
  const CUcontext other = this->device_.other_context();
  this->device_.destroy_other_context();
  EXPECT_EQ(this->api().synchronize_other_context(other), CUDA_SUCCESS);
  EXPECT_TRUE(this->device_.context_is_current());
}

TYPED_TEST(DeviceApiContractTest, TrimWithoutStreamOrderedMemoryReleasesNothing) {
  ScopedCurrentContext current(this->api());
  EXPECT_EQ(this->api().trim_stream_ordered_pools(), 0u);
}

TYPED_TEST(DeviceApiContractTest, PushMakesTheContextCurrentAndEachPopUndoesOnePush) {
  EXPECT_FALSE(this->device_.context_is_current());
  ASSERT_TRUE(this->api().push_current());
  EXPECT_TRUE(this->device_.context_is_current());
  ASSERT_TRUE(this->api().push_current());
  this->api().pop_current();
  EXPECT_TRUE(this->device_.context_is_current());
  this->api().pop_current();
  EXPECT_FALSE(this->device_.context_is_current());
}

// What makes the DriverDeviceApi cases above mean anything: its calls reach the simulated driver,
// not the shim's hooks linked into this test.
TEST(DriverDeviceApiTest, ReachesTheSimulatedDriverAndNoHook) {
  SimulatedDriverDevice device;
  ScopedCurrentContext current(device.api());
  const uint64_t driver_calls = fakecuda_calls("cuMemAlloc_v2");
  CUdeviceptr ptr = 0;
  ASSERT_EQ(device.api().allocate(kMiB, &ptr), CUDA_SUCCESS);
  EXPECT_EQ(device.api().free(ptr), CUDA_SUCCESS);
  EXPECT_EQ(fakecuda_calls("cuMemAlloc_v2"), driver_calls + 1);
  EXPECT_EQ(intercept::call_count(intercept::HookId::cuMemAlloc_v2), 0u);
  EXPECT_EQ(intercept::call_count(intercept::HookId::cuMemFree_v2), 0u);
}

}  // namespace
}  // namespace vramshim::pool
