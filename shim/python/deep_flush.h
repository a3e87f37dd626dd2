// The deep flush: ask the Python frameworks loaded in the process to give their cached GPU memory
// back (torch.cuda.empty_cache(), CuPy's default pool free_all_blocks()), with the GIL taken
// properly. For the control thread only: never call it from a signal handler or an allocation hook.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "shim/python/interpreter_symbols.h"

namespace vramshim::python {

enum class FlushStepOutcome {
  kRan,      // the framework's call returned normally
  kSkipped,  // the framework is not imported, or its GPU side never started
  kFailed,   // the call raised: detail holds "ExceptionType: message"
};

// "ran", "skipped" or "failed".
const char* flush_step_outcome_name(FlushStepOutcome outcome);

struct DeepFlushStep {
  std::string name;  // "torch.cuda.empty_cache" or "cupy.get_default_memory_pool().free_all_blocks"
  FlushStepOutcome outcome = FlushStepOutcome::kSkipped;
  std::string detail;  // why it was skipped or how it failed; empty when it ran
};

struct DeepFlushResult {
  bool ok = false;    // the GIL was taken and every step was attempted
  std::string error;  // when !ok: no Python, not initialized, finalizing, a time limit passed
  std::vector<DeepFlushStep> steps;
};

// Called after each step, with the GIL held, on the thread that runs the steps: lets the caller
// measure the bytes each step released. It must not call back into Python.
using DeepFlushObserver = std::function<void(const DeepFlushStep&)>;

// Looks frameworks up in sys.modules only (never imports anything). The GIL is requested from a
// helper thread: if it cannot be had within `gil_timeout` the call returns an error and the helper,
// should it get the GIL later, gives it straight back without running anything. Once the GIL is
// held the steps run to completion; the call waits for them `run_timeout` at most (a framework's
// call may wait for the device), then returns an error while they go on, and `after_step` is not
// called again. When the interpreter ends the helper thread during a step (CPython up to 3.13 ends
// a thread that takes the GIL back while it finalizes), the call returns an error at once; 3.14
// and later hang such a thread instead, and the call returns its error at the timeout.
// `devices`: the devices whose primary context the process holds, on each of which CuPy's pool
// (one per device) is emptied; none: the one current on the flush's thread. `meanwhile` (optional)
// is called on the calling thread every 50 ms or so while it waits (the control thread writes a
// report a signal asked for meanwhile).
DeepFlushResult deep_flush_frameworks(const InterpreterSymbols& symbols,
                                      std::chrono::milliseconds gil_timeout,
                                      std::chrono::milliseconds run_timeout,
                                      const DeepFlushObserver& after_step = {},
                                      const std::vector<int>& devices = {},
                                      const std::function<void()>& meanwhile = {});

}  // namespace vramshim::python
