// Native and Python frames merged into one stack, as memray's hybrid stacks and PyTorch's combined
// tracebacks show them.
#pragma once

#include <cstdint>

#include "shim/python/eval_frame_range.h"

namespace vramshim::python {

// The calling thread's Python frames, innermost first, as tagged frames (python_frame_tag.h).
// ends_eval_call[i]: frame i is the outermost of the frames one C call of the eval loop ran.
struct PythonFrames {
  const uint64_t* frames;
  const bool* ends_eval_call;
  int count;
  bool deeper = false;  // the thread had more, outer Python frames than these
};

struct MergedStack {
  int frames = 0;         // written to `out`
  int python_frames = 0;  // of them, Python frames
  // Some Python frames found no eval frame (the native stack was cut short, or `eval` does not
  // know all of the eval loop's code).
  bool python_frames_unmatched = false;
  // The thread had Python frames the stack left out: past `max`, or past what was walked.
  bool python_left_out = false;
};

// Writes `native` (return addresses, innermost first) into `out` (room for `max`), replacing each
// native frame of the eval loop by the Python frames that C call was running, in order: the k-th
// eval frame from the top gets the k-th group of Python frames. Eval frames left without a group
// stay native; Python frames left without an eval frame follow the native frames. Where not all
// fit, the innermost `max` Python frames are kept and the outermost native frames give way to them.
MergedStack merge_hybrid_stack(const uint64_t* native, int native_count, const PythonFrames& python,
                               const EvalFrameRange& eval, uint64_t* out, int max);

}  // namespace vramshim::python
