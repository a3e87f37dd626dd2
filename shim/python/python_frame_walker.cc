#include "shim/python/python_frame_walker.h"

#include "shim/python/object_reader.h"

namespace vramshim::python {

PythonFrameWalker::PythonFrameWalker(const InterpreterSymbols& symbols, const PythonLayout& layout)
    : symbols_(symbols), layout_(layout) {}

uintptr_t PythonFrameWalker::innermost_frame() const {
  // Before Py_Initialize and once finalization starts, thread states are not to be trusted
  // (finalization frees the states of daemon threads that may be calling us right now).
  if (symbols_.Py_IsInitialized() == 0 || symbols_.Py_IsFinalizing() != 0) return 0;
  // Reads the thread's gilstate TSS slot: safe without the GIL, set while the GIL is released.
  const auto thread = reinterpret_cast<uintptr_t>(symbols_.PyGILState_GetThisThreadState());
  if (!plausible_pointer(thread)) return 0;
  uintptr_t holder = thread;
  if (layout_.thread_cframe >= 0) {
    holder = read_field<uintptr_t>(thread, layout_.thread_cframe);
    if (!plausible_pointer(holder)) return 0;
  }
  return read_field<uintptr_t>(holder, layout_.cframe_current_frame);
}

int32_t PythonFrameWalker::instruction_of(uintptr_t frame, uintptr_t code) const {
  if (layout_.instruction == InstructionField::kLastiIndex) {
    return read_field<int32_t>(frame, layout_.frame_instruction);
  }
  const auto instruction = read_field<uintptr_t>(frame, layout_.frame_instruction);
  const auto units = static_cast<intptr_t>(instruction - (code + layout_.code_units)) / 2;
  constexpr intptr_t kLimit = intptr_t{1} << 30;
  if (units < -1 || units > kLimit) return -1;
  return static_cast<int32_t>(units);
}

int PythonFrameWalker::capture(PythonFrameRef* out, int max) const {
  if (max > kMaxFrames) max = kMaxFrames;
  uintptr_t frame = innermost_frame();
  const auto code_type = reinterpret_cast<uintptr_t>(symbols_.PyCode_Type);
  int count = 0;
  // Entry (C stack) frames do not count against `max`; bound the whole walk all the same.
  for (int steps = 0; count < max && steps < 2 * kMaxFrames && plausible_pointer(frame); ++steps) {
    const uintptr_t previous = read_field<uintptr_t>(frame, layout_.frame_previous);
    if (layout_.marker == EvalCallMarker::kEntryFrame &&
        read_field<uint8_t>(frame, layout_.frame_marker) == layout_.entry_frame_owner) {
      if (count > 0) out[count - 1].ends_eval_call = true;
      frame = previous;
      continue;
    }
    const uintptr_t code =
        read_field<uintptr_t>(frame, layout_.frame_code) & ~layout_.frame_code_tag_bits;
    if (!plausible_pointer(code) || read_field<uintptr_t>(code, layout_.object_type) != code_type) {
      break;
    }
    PythonFrameRef& ref = out[count++];
    ref.code = code;
    ref.name = read_field<uintptr_t>(code, layout_.code_name);
    ref.filename = read_field<uintptr_t>(code, layout_.code_filename);
    ref.linetable = read_field<uintptr_t>(code, layout_.code_linetable);
    ref.firstlineno = read_field<int32_t>(code, layout_.code_firstlineno);
    ref.instruction = instruction_of(frame, code);
    ref.ends_eval_call = layout_.marker == EvalCallMarker::kEveryFrame ||
                         (layout_.marker == EvalCallMarker::kIsEntryFlag &&
                          read_field<uint8_t>(frame, layout_.frame_marker) != 0);
    frame = previous;
  }
  // Finalization may have started during the walk: then the frames may be freed memory, not to be
  // resolved.
  return symbols_.Py_IsFinalizing() != 0 ? 0 : count;
}

int PythonFrameWalker::entry_frames(uintptr_t* out, int max) const {
  if (layout_.marker != EvalCallMarker::kEntryFrame) return 0;
  uintptr_t frame = innermost_frame();
  int count = 0;
  for (int steps = 0; count < max && steps < 2 * kMaxFrames && plausible_pointer(frame); ++steps) {
    if (read_field<uint8_t>(frame, layout_.frame_marker) == layout_.entry_frame_owner) {
      out[count++] = frame;
    }
    frame = read_field<uintptr_t>(frame, layout_.frame_previous);
  }
  return symbols_.Py_IsFinalizing() != 0 ? 0 : count;
}

}  // namespace vramshim::python
