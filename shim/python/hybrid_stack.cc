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
  // The Python frames name the user's code: every one that fits is kept, and the native frames get
  // the room left, innermost first. A deep native stack (a call through ctypes 70 levels down)
  // otherwise fills the depth before the eval loop's frames and leaves no room for them.
  const int python_count = std::clamp(python.count, 0, std::max(max, 0));
  const bool python_left_out = python.deeper || python_count < python.count;
  int native_room = max - python_count;
  const auto append_native = [&](const uint64_t* frames, int count) {
    native_room -= append(frames, std::min(count, native_room));
  };
  int next_python = 0;
  int next_native = 0;  // native[next_native, i) are still to be appended
  // Only eval frames are looked for; the runs of native frames between them are copied whole.
  for (int i = 0; i < native_count && next_python < python_count; ++i) {
    if (!eval.contains_return_address(native[i])) continue;
    append_native(native + next_native, i - next_native);
    next_native = i + 1;
    // The frames this C call of the eval loop ran: up to the outermost, which ends the call.
    int group_end = next_python;
    while (group_end < python_count && !python.ends_eval_call[group_end]) ++group_end;
    if (group_end < python_count) ++group_end;
    next_python += append(python.frames + next_python, group_end - next_python);
  }
  append_native(native + next_native, native_count - next_native);
  const bool unmatched = next_python < python_count;
  append(python.frames + next_python, python_count - next_python);
  return {written, python_count, unmatched, python_left_out};
}

}  // namespace vramshim::python
