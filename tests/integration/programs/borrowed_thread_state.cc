// A thread state made on one thread and run by another, as embedders hand thread states to their
// workers: PyThreadState_New binds the new state to the thread that made it (its gilstate slot),
// while another thread runs Python code with it. The maker then allocates GPU memory in a loop,
// while the runner's frames come and go. Loaded into a Python process by ctypes.PyDLL
// (tests/integration/python/alloc_app.py, mode "borrowed"); CPython's entry points are found in
// the process, the driver's by dlsym on libcuda.so.1 (which the preloaded shim answers with its
// hooks).
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

template <typename Function>
Function entry_point(const char* name, void* handle = RTLD_DEFAULT) {
  void* found = dlsym(handle, name);
  if (found == nullptr) {
    std::fprintf(stderr, "borrowed_thread_state: no %s in the process\n", name);
    std::exit(2);
  }
  return reinterpret_cast<Function>(found);
}

struct Run {
  CUcontext context;
  const char* code;
  void* interpreter;
  std::atomic<void*> state{nullptr};
  std::atomic<bool> done{false};
  std::atomic<long> allocations{0};
};

void* make_state_then_allocate(void* argument) {
  Run& run = *static_cast<Run*>(argument);
  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  entry_point<CUresult (*)(CUcontext)>("cuCtxSetCurrent", driver)(run.context);
  const auto allocate = entry_point<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2", driver);
  const auto release = entry_point<CUresult (*)(CUdeviceptr)>("cuMemFree_v2", driver);
  run.state = entry_point<void* (*)(void*)>("PyThreadState_New")(run.interpreter);
  while (!run.done) {
    CUdeviceptr ptr = 0;
    if (allocate(&ptr, 8192) == CUDA_SUCCESS) {
      release(ptr);
      ++run.allocations;
    }
  }
  return nullptr;
}

void* run_code_with_the_state(void* argument) {
  Run& run = *static_cast<Run*>(argument);
  while (run.state.load() == nullptr) usleep(100);
  entry_point<void (*)(void*)>("PyEval_RestoreThread")(run.state);
  entry_point<int (*)(const char*)>("PyRun_SimpleString")(run.code);
  run.done = true;
  entry_point<void (*)(void*)>("PyThreadState_Clear")(run.state);
  entry_point<void (*)()>("PyThreadState_DeleteCurrent")();
  return nullptr;
}

}  // namespace

// Runs `code` on a new thread with a thread state made by a second new thread, which allocates
// until the code is done; returns how many allocations it made. Called with the GIL held.
extern "C" long run_with_a_borrowed_thread_state(CUcontext context, const char* code) {
  Run run;
  run.context = context;
  run.code = code;
  run.interpreter = entry_point<void* (*)()>("PyInterpreterState_Main")();
  pthread_t maker, runner;
  pthread_create(&maker, nullptr, make_state_then_allocate, &run);
  pthread_create(&runner, nullptr, run_code_with_the_state, &run);
  void* saved = entry_point<void* (*)()>("PyEval_SaveThread")();
  pthread_join(runner, nullptr);
  pthread_join(maker, nullptr);
  entry_point<void (*)(void*)>("PyEval_RestoreThread")(saved);
  return run.allocations;
}
