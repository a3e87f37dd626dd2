// The code of CPython's bytecode evaluation loop, to recognise its frames in a native stack.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace vramshim::python {

// The extent of _PyEval_EvalFrameDefault's symbol, and the parts of the function that lie outside
// it. GCC's hot/cold partitioning moves code the profile calls rare into an unnamed part
// ("_PyEval_EvalFrameDefault.cold" in the full symbol table); in the PGO builds of Debian's 3.14
// and 3.15 that is nearly the whole loop, and the symbol keeps only the entry. Such parts are
// learnt from where the loop's entry frames lie on a thread's stack.
class EvalFrameRange {
 public:
  EvalFrameRange() = default;
  EvalFrameRange(uintptr_t begin, uintptr_t end) : begin_(begin), end_(end) {}
  EvalFrameRange(const EvalFrameRange&) = delete;
  EvalFrameRange& operator=(const EvalFrameRange&) = delete;

  // False when the symbol's extent is unknown: then no native frame matches.
  bool known() const { return begin_ != end_; }

  // A return address lies just after its call instruction, so it may equal a part's end.
  bool contains_return_address(uint64_t address) const {
    if (address > begin_ && address <= end_) return true;
    const int parts = part_count_.load(std::memory_order_acquire);
    for (int i = 0; i < parts; ++i) {
      if (address > part_begin_[i].load(std::memory_order_relaxed) &&
          address <= part_end_[i].load(std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Learns the parts of the function that hold `locals`: addresses of locals of its activations on
  // the calling thread's stack (the entry frames it pushes). A part is the unwind-table entry that
  // covers the activation's return address, kept when it lies in the symbol's module. Returns
  // whether a part was added. Unwinds the thread's stack: not for every allocation.
  bool learn_parts_holding(const uintptr_t* locals, int count);

  // The extent of the function at `function` (_PyEval_EvalFrameDefault), from the size its
  // module's dynamic symbol table gives it (dladdr1). Unknown when it has no size. Call at init.
  static EvalFrameRange of_function(const void* function);

 private:
  static constexpr int kMaxParts = 4;

  bool add_part(uintptr_t begin, uintptr_t end);

  const uintptr_t begin_ = 0;
  const uintptr_t end_ = 0;  // begin_ == end_: unknown
  std::mutex adding_;
  std::atomic<int> part_count_{0};  // published after the part's bounds
  std::atomic<uintptr_t> part_begin_[kMaxParts] = {};
  std::atomic<uintptr_t> part_end_[kMaxParts] = {};
};

}  // namespace vramshim::python
