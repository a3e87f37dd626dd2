#include "shim/python/hybrid_stack.h"

#include <algorithm>

namespace vramshim::python {

MergedStack merge_hybrid_stack(const uint64_t* native, int native_count, const PythonFrames& python,
                               const EvalFrameRange& eval, uint64_t* out, int max) {
  int written = 0;
  // Appends what fits of frames[0, count) and returns how many did.
  const auto append = [&](const uint64_t* frames, int count) {
    count = std::max(0, std::min(count, max - written));
    std::copy_n(frames, count, out + written);  // frames may be null when count is 0
    written += count;
    return count;
  };
  int next_python = 0;
  int next_native = 0;  // native[next_native, i) are still to be appended
  // Only eval frames are looked for; the runs of native frames between them are copied whole.
  for (int i = 0; i < native_count && next_python < python.count && written < max; ++i) {
    if (!eval.contains_return_address(native[i])) continue;
    append(native + next_native, i - next_native);
    next_native = i + 1;
    // The frames this C call of the eval loop ran: up to the outermost, which ends the call.
    int group_end = next_python;
    while (group_end < python.count && !python.ends_eval_call[group_end]) ++group_end;
    if (group_end < python.count) ++group_end;
    next_python += append(python.frames + next_python, group_end - next_python);
  }
  append(native + next_native, native_count - next_native);
  const bool unmatched = next_python < python.count;
  append(python.frames + next_python, python.count - next_python);
  return {written, unmatched};
}

}  // namespace vramshim::python
