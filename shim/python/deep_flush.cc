#include "shim/python/deep_flush.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "shim/support/own_threads.h"

namespace vramshim::python {

const char* flush_step_outcome_name(FlushStepOutcome outcome) {
  switch (outcome) {
    case FlushStepOutcome::kRan:
      return "ran";
    case FlushStepOutcome::kSkipped:
      return "skipped";
    case FlushStepOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

namespace {

// How often a waiting deep flush lets its caller act (deep_flush_frameworks' `meanwhile`).
constexpr std::chrono::milliseconds kMeanwhileInterval{50};

// Python calls made with the GIL held; owns the new references it creates.
class FrameworkCalls {
 public:
  explicit FrameworkCalls(const InterpreterSymbols& py) : py_(py) {}

  // sys.modules[name] (borrowed), or null when it is not imported.
  PyObjectPtr imported_module(const char* name) const {
    PyObjectPtr modules = py_.PyImport_GetModuleDict();
    return modules == nullptr ? nullptr : py_.PyDict_GetItemString(modules, name);
  }

  // getattr(object, name)() as a new reference, or null with the error in `error`.
  PyObjectPtr call_method(PyObjectPtr object, const char* name, std::string* error) const {
    PyObjectPtr method = py_.PyObject_GetAttrString(object, name);
    if (method == nullptr) {
      *error = take_error();
      return nullptr;
    }
    PyObjectPtr result = py_.PyObject_CallObject(method, nullptr);
    py_.Py_DecRef(method);
    if (result == nullptr) *error = take_error();
    return result;
  }

  // callable(number) as a new reference, or null with the error in `error`.
  PyObjectPtr call_with_number(PyObjectPtr callable, long number, std::string* error) const {
    PyObjectPtr argument = py_.PyLong_FromLong(number);
    if (argument == nullptr) {
      *error = take_error();
      return nullptr;
    }
    PyObjectPtr result = py_.PyObject_CallFunctionObjArgs(callable, argument, nullptr);
    py_.Py_DecRef(argument);
    if (result == nullptr) *error = take_error();
    return result;
  }

  PyObjectPtr attribute(PyObjectPtr object, const char* name, std::string* error) const {
    PyObjectPtr value = py_.PyObject_GetAttrString(object, name);
    if (value == nullptr) *error = take_error();
    return value;
  }

  // truth(object): 1 or 0, or -1 with the error in `error`.
  int truth(PyObjectPtr object, std::string* error) const {
    const int value = py_.PyObject_IsTrue(object);
    if (value < 0) *error = take_error();
    return value;
  }

  void release(PyObjectPtr object) const {
    if (object != nullptr) py_.Py_DecRef(object);
  }

  // "Type: message" of the pending exception, which is cleared.
  std::string take_error() const {
    if (py_.PyErr_Occurred() == nullptr) return "failed without a Python exception";
    PyObjectPtr type = nullptr;
    PyObjectPtr value = nullptr;
    PyObjectPtr traceback = nullptr;
    py_.PyErr_Fetch(&type, &value, &traceback);
    std::string text = text_of_attribute(type, "__name__");
    PyObjectPtr message = value != nullptr ? py_.PyObject_Str(value) : nullptr;
    const char* utf8 = message != nullptr ? py_.PyUnicode_AsUTF8(message) : nullptr;
    if (utf8 != nullptr && *utf8 != '\0') text += std::string(": ") + utf8;
    release(message);
    release(type);
    release(value);
    release(traceback);
    py_.PyErr_Clear();
    return text;
  }

 private:
  std::string text_of_attribute(PyObjectPtr object, const char* name) const {
    if (object == nullptr) return "error";
    PyObjectPtr value = py_.PyObject_GetAttrString(object, name);
    const char* utf8 = value != nullptr ? py_.PyUnicode_AsUTF8(value) : nullptr;
    std::string text = utf8 != nullptr ? utf8 : "error";
    release(value);
    py_.PyErr_Clear();
    return text;
  }

  const InterpreterSymbols& py_;
};

// torch.cuda.empty_cache() empties the cache of every device.
DeepFlushStep flush_torch(const FrameworkCalls& calls, const std::vector<int>&) {
  DeepFlushStep step{"torch.cuda.empty_cache", FlushStepOutcome::kSkipped, ""};
  PyObjectPtr torch = calls.imported_module("torch");
  if (torch == nullptr) {
    step.detail = "torch is not imported";
    return step;
  }
  std::string error;
  PyObjectPtr cuda = calls.attribute(torch, "cuda", &error);
  PyObjectPtr initialized =
      cuda != nullptr ? calls.call_method(cuda, "is_initialized", &error) : nullptr;
  const int truth = initialized != nullptr ? calls.truth(initialized, &error) : -1;
  calls.release(initialized);
  if (truth == 0) {
    step.detail = "torch.cuda is not initialized";
  } else if (truth > 0) {
    calls.release(calls.call_method(cuda, "empty_cache", &error));
  }
  calls.release(cuda);
  if (truth != 0) {
    step.outcome = error.empty() ? FlushStepOutcome::kRan : FlushStepOutcome::kFailed;
    step.detail = error;
  }
  return step;
}

// CuPy's default pool keeps one pool per device, and free_all_blocks() empties the current
// device's: cupy.cuda.Device(d).use() first, for each device (this thread's own current device;
// only devices the process already holds, so that no context is made for the flush).
DeepFlushStep flush_cupy(const FrameworkCalls& calls, const std::vector<int>& devices) {
  DeepFlushStep step{"cupy.get_default_memory_pool().free_all_blocks", FlushStepOutcome::kSkipped,
                     ""};
  PyObjectPtr cupy = calls.imported_module("cupy");
  if (cupy == nullptr) {
    step.detail = "cupy is not imported";
    return step;
  }
  std::string error;
  PyObjectPtr pool = calls.call_method(cupy, "get_default_memory_pool", &error);
  PyObjectPtr cuda =
      pool != nullptr && !devices.empty() ? calls.attribute(cupy, "cuda", &error) : nullptr;
  PyObjectPtr device_type = cuda != nullptr ? calls.attribute(cuda, "Device", &error) : nullptr;
  if (pool != nullptr && devices.empty()) {
    calls.release(calls.call_method(pool, "free_all_blocks", &error));
  }
  for (size_t i = 0; device_type != nullptr && error.empty() && i < devices.size(); ++i) {
    PyObjectPtr device = calls.call_with_number(device_type, devices[i], &error);
    if (device != nullptr) calls.release(calls.call_method(device, "use", &error));
    if (error.empty()) calls.release(calls.call_method(pool, "free_all_blocks", &error));
    calls.release(device);
  }
  calls.release(device_type);
  calls.release(cuda);
  calls.release(pool);
  step.outcome = error.empty() ? FlushStepOutcome::kRan : FlushStepOutcome::kFailed;
  step.detail = error;
  return step;
}

// What the requesting thread and the helper thread share; the last of them to finish frees it.
struct FlushJob {
  enum class State { kWaitingForGil, kRunning, kDone, kAbandoned };

  FlushJob(const InterpreterSymbols& py, DeepFlushObserver observer, std::vector<int> devices)
      : py(py), after_step(std::move(observer)), devices(std::move(devices)) {}

  const InterpreterSymbols py;
  const DeepFlushObserver after_step;
  const std::vector<int> devices;
  std::mutex mutex;
  std::condition_variable changed;
  State state = State::kWaitingForGil;
  DeepFlushResult result;
};

void run_steps(FlushJob& job) {
  if (job.py.Py_IsFinalizing() != 0) {
    job.result.error = "the Python interpreter is finalizing";
    return;
  }
  const FrameworkCalls calls(job.py);
  for (DeepFlushStep (*step)(const FrameworkCalls&, const std::vector<int>&) :
       {flush_torch, flush_cupy}) {
    job.result.steps.push_back(step(calls, job.devices));
    // The observer belongs to the requesting call, which may have stopped waiting.
    std::lock_guard<std::mutex> lock(job.mutex);
    if (job.state == FlushJob::State::kAbandoned) return;
    if (job.after_step) job.after_step(job.result.steps.back());
  }
  job.result.ok = true;
}

// Marks the job done however the helper thread ends, so the requesting call never waits for a
// thread that is gone: CPython ends a thread that waits for the GIL, or takes it back, while the
// interpreter finalizes (pthread_exit, whose unwinding runs this destructor).
class DoneOnExit {
 public:
  explicit DoneOnExit(FlushJob& job) : job_(job) {}
  DoneOnExit(const DoneOnExit&) = delete;
  DoneOnExit& operator=(const DoneOnExit&) = delete;
  ~DoneOnExit() {
    {
      std::lock_guard<std::mutex> lock(job_.mutex);
      if (job_.state == FlushJob::State::kAbandoned) return;  // nobody waits
      if (!finished_) {
        job_.result.ok = false;
        job_.result.error = "the Python interpreter ended the flush's thread (finalizing)";
      }
      job_.state = FlushJob::State::kDone;
    }
    job_.changed.notify_all();
  }
  void finished() { finished_ = true; }

 private:
  FlushJob& job_;
  bool finished_ = false;
};

// The helper thread. PyGILState_Ensure may block for as long as another thread holds the GIL, and
// on an interpreter that started finalizing meanwhile CPython ends the calling thread inside it
// (pthread_exit): the unwinding tells the requesting call and releases the shared_ptr then.
void* take_gil_and_flush(void* argument) {
  const support::OwnThread own;
  const std::unique_ptr<std::shared_ptr<FlushJob>> holder(
      static_cast<std::shared_ptr<FlushJob>*>(argument));
  FlushJob& job = **holder;
  DoneOnExit done(job);
  const GilState gil = job.py.PyGILState_Ensure();
  {
    std::lock_guard<std::mutex> lock(job.mutex);
    if (job.state == FlushJob::State::kAbandoned) {
      job.py.PyGILState_Release(gil);
      return nullptr;
    }
    job.state = FlushJob::State::kRunning;
  }
  job.changed.notify_all();
  try {
    run_steps(job);
  } catch (const std::exception& e) {
    job.result.ok = false;
    job.result.error = std::string("deep flush failed: ") + e.what();
  }
  job.py.PyGILState_Release(gil);
  done.finished();
  return nullptr;
}

// Starts the helper thread (support::start_own_thread: detached, the program's signals blocked,
// a fault in a framework's code reported as a crash).
bool start_helper(std::shared_ptr<FlushJob> job) {
  auto* argument = new std::shared_ptr<FlushJob>(std::move(job));
  const int failed = support::start_own_thread(take_gil_and_flush, argument);
  if (failed != 0) delete argument;
  return failed == 0;
}

DeepFlushResult error_result(std::string error) {
  DeepFlushResult result;
  result.error = std::move(error);
  return result;
}

}  // namespace

DeepFlushResult deep_flush_frameworks(const InterpreterSymbols& symbols,
                                      std::chrono::milliseconds gil_timeout,
                                      std::chrono::milliseconds run_timeout,
                                      const DeepFlushObserver& after_step,
                                      const std::vector<int>& devices,
                                      const std::function<void()>& meanwhile) {
  if (!symbols.has_interpreter()) return error_result("the process does not run Python");
  if (!symbols.has_flush_api()) {
    return error_result("the Python interpreter lacks the C API the deep flush needs");
  }
  if (symbols.Py_IsInitialized() == 0) {
    return error_result("the Python interpreter is not initialized");
  }
  if (symbols.Py_IsFinalizing() != 0) return error_result("the Python interpreter is finalizing");

  auto job = std::make_shared<FlushJob>(symbols, after_step, devices);
  if (!start_helper(job)) return error_result("could not start a thread to take the GIL");
  std::unique_lock<std::mutex> lock(job->mutex);
  // Waits until `done()` or `timeout`, calling `meanwhile` between slices of the wait with the
  // job's lock released (the helper thread takes it to say how far it got).
  const auto wait = [&](std::chrono::milliseconds timeout, auto done) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto slice_end =
          std::min(deadline, std::chrono::steady_clock::now() + kMeanwhileInterval);
      if (job->changed.wait_until(lock, slice_end, done)) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      if (meanwhile) {
        lock.unlock();
        meanwhile();
        lock.lock();
      }
    }
  };
  const bool got_gil =
      wait(gil_timeout, [&] { return job->state != FlushJob::State::kWaitingForGil; });
  if (!got_gil) {
    job->state = FlushJob::State::kAbandoned;
    return error_result("could not take the Python GIL within " +
                        std::to_string(gil_timeout.count()) + " ms");
  }
  const bool done = wait(run_timeout, [&] { return job->state == FlushJob::State::kDone; });
  if (!done) {
    job->state = FlushJob::State::kAbandoned;
    return error_result("the frameworks did not finish flushing within " +
                        std::to_string(run_timeout.count()) + " ms (they go on)");
  }
  return job->result;
}

}  // namespace vramshim::python
