// The deep flush and the stack support in a process that does not run Python (this test), and the
// deep flush against an interpreter of function pointers.
#include "shim/python/deep_flush.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shim/python/python_stacks.h"

namespace vramshim::python {
namespace {

using std::chrono::milliseconds;

TEST(DeepFlushWithoutPythonTest, ReturnsAClearError) {
  bool observed = false;
  const DeepFlushResult result =
      deep_flush_frameworks(find_interpreter_symbols(), milliseconds(100), milliseconds(100),
                            [&](const DeepFlushStep&) { observed = true; });
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error, "the process does not run Python");
  EXPECT_TRUE(result.steps.empty());
  EXPECT_FALSE(observed);
}

// An interpreter of function pointers in which torch is imported and its CUDA initialized, and
// torch.cuda.empty_cache() does what the test sets; and, when `cupy_imported`, a CuPy whose calls
// are written into `cupy_calls`.
namespace fake {

char torch, cuda, is_initialized, empty_cache, result;
char cupy, get_pool, pool, free_all_blocks, cupy_cuda, device_type, device, use, number;
bool cupy_imported = false;
long last_number = -1;
std::vector<std::string> cupy_calls;
const char version[] = "3.11.2";
std::function<void()> on_empty_cache;

int one() { return 1; }
int zero() { return 0; }
void* no_object() { return nullptr; }
const char* get_version() { return version; }
std::function<void()> on_ensure;
GilState ensure() {
  if (on_ensure) on_ensure();
  return 0;
}
void release(GilState) {}
void* modules() { return &torch; }  // any non-null object
void* module(void*, const char* name) {
  if (std::string(name) == "cupy") return cupy_imported ? &cupy : nullptr;
  return std::string(name) == "torch" ? &torch : nullptr;
}
void* attribute(void* object, const char* name) {
  const std::string wanted(name);
  if (object == &torch && wanted == "cuda") return &cuda;
  if (object == &cuda && wanted == "is_initialized") return &is_initialized;
  if (object == &cuda && wanted == "empty_cache") return &empty_cache;
  if (object == &cupy && wanted == "get_default_memory_pool") return &get_pool;
  if (object == &cupy && wanted == "cuda") return &cupy_cuda;
  if (object == &cupy_cuda && wanted == "Device") return &device_type;
  if (object == &device && wanted == "use") return &use;
  if (object == &pool && wanted == "free_all_blocks") return &free_all_blocks;
  return nullptr;
}
void* call(void* method, void*) {
  if (method == &empty_cache && on_empty_cache) on_empty_cache();
  if (method == &get_pool) return &pool;
  if (method == &use) cupy_calls.push_back("use");
  if (method == &free_all_blocks) cupy_calls.push_back("free_all_blocks");
  return &result;
}
void* from_long(long value) {
  last_number = value;
  return &number;
}
void* call_with_objects(void* callable, ...) {
  if (callable != &device_type) return nullptr;
  cupy_calls.push_back("Device(" + std::to_string(last_number) + ")");
  return &device;
}
int is_true(void*) { return 1; }
void dec_ref(void*) {}
void fetch(void**, void**, void**) {}
void clear() {}
void* str(void*) { return nullptr; }
const char* utf8(void*) { return nullptr; }

InterpreterSymbols symbols() {
  InterpreterSymbols py;
  py.Py_IsInitialized = one;
  py.Py_IsFinalizing = zero;
  py.PyGILState_GetThisThreadState = no_object;
  py.Py_GetVersion = get_version;
  py.PyCode_Type = &result;
  py.PyGILState_Ensure = ensure;
  py.PyGILState_Release = release;
  py.PyImport_GetModuleDict = modules;
  py.PyDict_GetItemString = module;
  py.PyObject_GetAttrString = attribute;
  py.PyObject_CallObject = call;
  py.PyObject_CallFunctionObjArgs = call_with_objects;
  py.PyLong_FromLong = from_long;
  py.PyObject_IsTrue = is_true;
  py.Py_DecRef = dec_ref;
  py.PyErr_Occurred = no_object;
  py.PyErr_Fetch = fetch;
  py.PyErr_Clear = clear;
  py.PyObject_Str = str;
  py.PyUnicode_AsUTF8 = utf8;
  return py;
}

}  // namespace fake

// Runs the deep flush on a thread of its own; nullopt if it has not returned within 10 s (the
// thread is left behind).
std::optional<DeepFlushResult> flush_within_10_s(milliseconds run_timeout,
                                                 const DeepFlushObserver& after_step,
                                                 const std::vector<int>& devices = {}) {
  auto done = std::make_shared<std::promise<DeepFlushResult>>();
  std::future<DeepFlushResult> result = done->get_future();
  std::thread([done, run_timeout, after_step, devices] {
    done->set_value(deep_flush_frameworks(fake::symbols(), milliseconds(1000), run_timeout,
                                          after_step, devices));
  }).detach();
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return std::nullopt;
  return result.get();
}

TEST(DeepFlushTest, RunsTheStepsAndTellsTheObserver) {
  fake::on_empty_cache = nullptr;
  std::vector<std::string> observed;
  const auto result = flush_within_10_s(
      milliseconds(5000), [&](const DeepFlushStep& step) { observed.push_back(step.name); });
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok) << result->error;
  ASSERT_EQ(result->steps.size(), 2u);
  EXPECT_EQ(result->steps[0].outcome, FlushStepOutcome::kRan);
  EXPECT_EQ(result->steps[1].detail, "cupy is not imported");
  EXPECT_EQ(observed.size(), 2u);
}

// CuPy's default pool empties the current device's pool only: each device the process holds is
// made current (cupy.cuda.Device(d).use()) and emptied; with none known, the current one.
TEST(DeepFlushTest, CupysPoolIsEmptiedOnEachDevice) {
  fake::on_empty_cache = nullptr;
  fake::cupy_imported = true;
  fake::cupy_calls.clear();
  auto result = flush_within_10_s(milliseconds(5000), {}, {0, 2});
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok) << result->error;
  ASSERT_EQ(result->steps.size(), 2u);
  EXPECT_EQ(result->steps[1].outcome, FlushStepOutcome::kRan) << result->steps[1].detail;
  EXPECT_EQ(fake::cupy_calls, (std::vector<std::string>{"Device(0)", "use", "free_all_blocks",
                                                        "Device(2)", "use", "free_all_blocks"}));
  fake::cupy_calls.clear();
  result = flush_within_10_s(milliseconds(5000), {});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(fake::cupy_calls, std::vector<std::string>{"free_all_blocks"});
  fake::cupy_imported = false;
}

TEST(DeepFlushTest, AThreadTheInterpreterEndsDuringAStepEndsTheWait) {
  // What CPython does to a thread that takes the GIL back while the interpreter finalizes.
  fake::on_empty_cache = [] { pthread_exit(nullptr); };
  const auto result = flush_within_10_s(milliseconds(60000), {});
  ASSERT_TRUE(result.has_value()) << "the flush waited for a thread that is gone";
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->error, "the Python interpreter ended the flush's thread (finalizing)");
}

TEST(DeepFlushTest, AThreadTheInterpreterEndsWhileItWaitsForTheGilEndsTheWait) {
  // What CPython does to a thread waiting for the GIL when the interpreter starts finalizing.
  fake::on_ensure = [] { pthread_exit(nullptr); };
  const std::optional<DeepFlushResult> result = flush_within_10_s(milliseconds(60000), {});
  fake::on_ensure = nullptr;
  ASSERT_TRUE(result.has_value()) << "the flush waited for a thread that is gone";
  // Told by the unwinding, not by the GIL's time limit ("could not take the Python GIL").
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->error, "the Python interpreter ended the flush's thread (finalizing)");
  EXPECT_TRUE(result->steps.empty());
}

TEST(DeepFlushTest, StepsOverTheTimeLimitAreLeftToFinishWithoutTheObserver) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  fake::on_empty_cache = [released] { released.wait(); };
  auto observed = std::make_shared<std::atomic<int>>(0);
  const auto result = flush_within_10_s(
      milliseconds(200), [observed](const DeepFlushStep&) { observed->fetch_add(1); });
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->error, "the frameworks did not finish flushing within 200 ms (they go on)");
  release.set_value();  // the step returns now: the observer of a call that returned stays unused
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(observed->load(), 0);
}

TEST(PythonStacksWithoutPythonTest, StacksStayNative) {
  EXPECT_FALSE(find_interpreter_symbols().has_interpreter());
  EXPECT_EQ(PythonStacks::create(), nullptr);
}

TEST(FlushStepOutcomeTest, NamesEachOutcome) {
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kRan), "ran");
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kSkipped), "skipped");
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kFailed), "failed");
}

}  // namespace
}  // namespace vramshim::python
