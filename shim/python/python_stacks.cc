#include "shim/python/python_stacks.h"

#include "shim/control/log.h"
#include "shim/python/hybrid_stack.h"

namespace vramshim::python {

PythonVersion running_version(const InterpreterSymbols& symbols) {
  if (symbols.Py_Version != nullptr)
    return version_from_hex(static_cast<uint32_t>(*symbols.Py_Version));
  if (symbols.Py_GetVersion != nullptr) return parse_version_text(symbols.Py_GetVersion());
  return {};
}

std::unique_ptr<PythonStacks> PythonStacks::create(size_t frame_table_bytes) {
  const InterpreterSymbols symbols = find_interpreter_symbols();
  if (!symbols.has_interpreter()) {
    if (symbols.Py_IsInitialized != nullptr) {
      control::log(control::LogLevel::kWarn,
                   "a Python runtime is loaded but lacks the symbols Python frames need; stacks "
                   "stay native-only");
    }
    return nullptr;
  }
  const PythonVersion version = running_version(symbols);
  const std::optional<PythonLayout> layout = layout_for(version, symbols._PyRuntime);
  if (!layout) {
    control::log(control::LogLevel::kWarn,
                 "Python %d.%d.%d: frame layout unknown (3.10 to 3.15 are supported); stacks stay "
                 "native-only",
                 version.major, version.minor, version.micro);
    return nullptr;
  }
  auto stacks = std::make_unique<PythonStacks>(symbols, *layout, frame_table_bytes);
  if (!stacks->eval_frames().known()) {
    control::log(control::LogLevel::kWarn,
                 "the extent of _PyEval_EvalFrameDefault is unknown; Python frames follow the "
                 "native frames instead of replacing the interpreter's");
  }
  return stacks;
}

PythonStacks::PythonStacks(const InterpreterSymbols& symbols, const PythonLayout& layout,
                           size_t frame_table_bytes)
    : symbols_(symbols),
      layout_(layout),
      walker_(symbols, layout),
      eval_(EvalFrameRange::of_function(symbols._PyEval_EvalFrameDefault)),
      frames_(layout, frame_table_bytes) {}

int PythonStacks::python_stack(uint64_t* out, bool* ends_eval_call, int max,
                               bool* deeper) noexcept {
  if (max > kMaxPythonFrames) max = kMaxPythonFrames;
  // One frame more than kept tells a stack that goes deeper.
  PythonFrameRef refs[kMaxPythonFrames + 1];
  int captured = walker_.capture(refs, max + 1);
  if (deeper != nullptr) *deeper = captured > max;
  if (captured > max) captured = max;
  int count = 0;
  for (int i = 0; i < captured; ++i) {
    const uint32_t id = frames_.intern(refs[i]);
    if (id == PythonFrameTable::kNoFrame) break;
    if (id == PythonFrameTable::kInternalFrame) {
      // Left out; the frame below it ends the eval call it would have ended.
      if (refs[i].ends_eval_call && count > 0) ends_eval_call[count - 1] = true;
      continue;
    }
    out[count] = tag_python_frame(id);
    ends_eval_call[count] = refs[i].ends_eval_call;
    ++count;
  }
  return count;
}

MergedStack PythonStacks::hybrid_stack(const uint64_t* native, int native_count, uint64_t* out,
                                       int max) noexcept {
  uint64_t python[kMaxPythonFrames];
  bool ends_eval_call[kMaxPythonFrames];
  bool deeper = false;
  const int python_count = python_stack(python, ends_eval_call, kMaxPythonFrames, &deeper);
  const PythonFrames frames{python, ends_eval_call, python_count, deeper};
  MergedStack merged = merge_hybrid_stack(native, native_count, frames, eval_, out, max);
  if (merged.python_frames_unmatched && learn_eval_parts()) {
    merged = merge_hybrid_stack(native, native_count, frames, eval_, out, max);
  }
  return merged;
}

bool PythonStacks::learn_eval_parts() noexcept {
  if (learning_attempts_left_.load(std::memory_order_relaxed) <= 0 ||
      learning_attempts_left_.fetch_sub(1, std::memory_order_relaxed) <= 0) {
    return false;
  }
  uintptr_t entry_frames[kMaxEntryFrames];
  const int count = walker_.entry_frames(entry_frames, kMaxEntryFrames);
  return eval_.learn_parts_holding(entry_frames, count);
}

}  // namespace vramshim::python
