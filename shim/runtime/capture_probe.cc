#include "shim/runtime/capture_probe.h"

#include "shim/intercept/hook_declarations.h"
#include "shim/support/deferred_cancellation.h"

namespace vramshim::runtime {
namespace {

// The calling thread's last answer, with what it depends on.
struct CaptureAnswer {
  bool known;
  uint64_t capture_changes;
  uint64_t mode_changes;
  CUresult answer;
};
thread_local CaptureAnswer t_answer{false, 0, 0, CUDA_SUCCESS};
thread_local uint64_t t_mode_changes = 0;

bool is_capture_error(CUresult result) {
  return result >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
         result <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

}  // namespace

CUresult refused_by_active_capture(const pool::CaptureState& capture) noexcept {
  // Read before asking: a capture that begins or ends meanwhile makes the next call ask again.
  const uint64_t changes = capture.changes();
  if (t_answer.known && t_answer.capture_changes == changes &&
      t_answer.mode_changes == t_mode_changes) {
    return t_answer.answer;
  }
  // An allocation of the driver's own, and its free: a free waits for the device's work, so it is
  // made once per thread and state of the captures, not per call.
  const support::DeferredCancellation deferred;
  CUdeviceptr probe = 0;
  CUresult result = real::cuMemAlloc_v2(&probe, 1);
  if (result == CUDA_SUCCESS) {
    real::cuMemFree_v2(probe);
  } else if (!is_capture_error(result)) {
    result = CUDA_SUCCESS;  // out of memory: the pool may still serve; asked again next time
    return result;
  }
  t_answer = {true, changes, t_mode_changes, result};
  return result;
}

void on_capture_mode_exchanged() noexcept { ++t_mode_changes; }

}  // namespace vramshim::runtime
