// Python-aware stacks for the shim: detection of the running interpreter, capture of the calling
// thread's Python frames, their merge into native stacks, and what each Python frame names.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "shim/python/eval_frame_range.h"
#include "shim/python/hybrid_stack.h"
#include "shim/python/interpreter_symbols.h"
#include "shim/python/python_frame_table.h"
#include "shim/python/python_frame_tag.h"
#include "shim/python/python_frame_walker.h"
#include "shim/python/python_layout.h"

namespace vramshim::python {

class PythonStacks {
 public:
  // Frames of Python kept per stack at most (before the merge, which `max` bounds again).
  static constexpr int kMaxPythonFrames = 128;

  // Null in a process without CPython, or with an interpreter whose layout is unknown (then after
  // one warning line "vramshim: …"): stacks stay native-only. Looks the interpreter up among the
  // loaded objects: call it once at init, unless VRAMSHIM_PYTHON is off. `frame_table_bytes`: the
  // Python frame table's budget (VRAMSHIM_STACK_TABLE).
  static std::unique_ptr<PythonStacks> create(
      size_t frame_table_bytes = attribution::kDefaultStackTableBytes);

  // Also for tests: a given interpreter and layout.
  PythonStacks(const InterpreterSymbols& symbols, const PythonLayout& layout,
               size_t frame_table_bytes = attribution::kDefaultStackTableBytes);

  // The hybrid stack of the calling thread: `native` (return addresses, innermost first) with the
  // eval loop's frames replaced by the Python frames they run (tagged, see python_frame_tag.h).
  // Writes at most `max` frames into `out` and says how many, and whether Python frames were left
  // out; a thread that runs no Python gets `native` unchanged. No GIL, no lock and no allocation
  // once the thread's frames are known and the eval loop's parts learnt: while Python frames find
  // no eval frame, the first few calls unwind the thread's stack to learn them
  // (EvalFrameRange::learn_parts_holding).
  MergedStack hybrid_stack(const uint64_t* native, int native_count, uint64_t* out,
                           int max) noexcept;

  // The Python frames only (tagged, innermost first), at most `max` (and kMaxPythonFrames);
  // `deeper`, when given, says whether the thread had more.
  int python_stack(uint64_t* out, bool* ends_eval_call, int max, bool* deeper = nullptr) noexcept;

  // What a tagged Python frame names (for the report writer).
  PythonFrameInfo describe(uint64_t tagged_frame) const {
    return frames_.describe(python_frame_id(tagged_frame));
  }

  const InterpreterSymbols& symbols() const { return symbols_; }
  const PythonLayout& layout() const { return layout_; }
  const EvalFrameRange& eval_frames() const { return eval_; }

 private:
  // Learns the parts of the eval loop that hold the calling thread's entry frames, at most
  // kLearningAttempts times per process. Returns whether one was added.
  bool learn_eval_parts() noexcept;

  static constexpr int kLearningAttempts = 8;
  static constexpr int kMaxEntryFrames = 64;

  const InterpreterSymbols symbols_;
  const PythonLayout layout_;
  const PythonFrameWalker walker_;
  EvalFrameRange eval_;
  std::atomic<int> learning_attempts_left_{kLearningAttempts};
  PythonFrameTable frames_;
};

// The version of the interpreter `symbols` describe: Py_Version on 3.11+, else Py_GetVersion().
PythonVersion running_version(const InterpreterSymbols& symbols);

}  // namespace vramshim::python
