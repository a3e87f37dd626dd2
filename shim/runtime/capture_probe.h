// Whether the driver would refuse the calling thread's cuMemAlloc or cuMemFree now, for a stream
// capture's sake: the pool must refuse what the driver refuses (docs/design.md, "Captures").
#pragma once

#include "shim/intercept/cuda_api.h"
#include "shim/pool/capture_state.h"

namespace vramshim::runtime {

// The capture error the driver answers the calling thread's cuMemAlloc with now while a capture
// is active, else CUDA_SUCCESS (and then has invalidated the captures concerned, as the program's
// own call would have). Asks the driver once per thread while the captures and the thread's
// capture mode stay as they are.
CUresult refused_by_active_capture(const pool::CaptureState& capture) noexcept;

// CUDA_SUCCESS, or the capture error the driver would answer: a load and a branch while no
// capture is active (every allocation and free asks).
inline CUresult refused_by_capture(const pool::CaptureState& capture) noexcept {
  return capture.active() ? refused_by_active_capture(capture) : CUDA_SUCCESS;
}

// The calling thread changed its capture mode (cuThreadExchangeStreamCaptureMode).
void on_capture_mode_exchanged() noexcept;

}  // namespace vramshim::runtime
