#include "shim/python/hybrid_stack.h"

namespace vramshim::python {

MergedStack merge_hybrid_stack(const uint64_t* native, int native_count, const PythonFrames& python,
                               const EvalFrameRange& eval, uint64_t* out, int max) {
  int written = 0;
  int next_python = 0;
  for (int i = 0; i < native_count && written < max; ++i) {
    if (next_python < python.count && eval.contains_return_address(native[i])) {
      bool group_ended = false;
      while (next_python < python.count && !group_ended && written < max) {
        group_ended = python.ends_eval_call[next_python];
        out[written++] = python.frames[next_python++];
      }
    } else {
      out[written++] = native[i];
    }
  }
  const bool unmatched = next_python < python.count;
  while (next_python < python.count && written < max) out[written++] = python.frames[next_python++];
  return {written, unmatched};
}

}  // namespace vramshim::python
