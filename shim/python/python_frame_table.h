// Python frames resolved to file, function and line once per distinct (code object, instruction),
// and interned into dense frame ids.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim/attribution/stack_table_budget.h"
#include "shim/python/python_frame_walker.h"
#include "shim/python/python_layout.h"

namespace vramshim::python {

struct PythonFrameInfo {
  std::string file;
  std::string function;  // the qualified name (Class.method) on 3.11+
  int line = -1;         // -1 when the instruction has no line
};

// Lookups of known frames are lock-free (a hash probe on (code, instruction, name, firstlineno));
// a frame seen for the first time takes the table's mutex, copies its strings and line out of the
// code object, and gets an id. Frames that resolve to the same file, function and line share one
// id. Ids are never reused. The table takes at most a budget of host memory (VRAMSHIM_STACK_TABLE):
// past it, a frame not seen before is kOverflowFrame, known ones are still found.
class PythonFrameTable {
 public:
  static constexpr uint32_t kNoFrame = UINT32_MAX;
  // The id of a frame CPython runs for itself and never shows in a traceback: 3.13's
  // _Py_InitCleanup, which a specialized call of a class pushes below its __init__ (its file and
  // its name are both "__init__"). Stacks leave it out.
  static constexpr uint32_t kInternalFrame = UINT32_MAX - 1;
  // The id of every frame first seen past the budget; describe() names it kPastStackTableName.
  static constexpr uint32_t kOverflowFrame = UINT32_MAX - 2;

  explicit PythonFrameTable(const PythonLayout& layout,
                            size_t budget_bytes = attribution::kDefaultStackTableBytes);
  ~PythonFrameTable();
  PythonFrameTable(const PythonFrameTable&) = delete;
  PythonFrameTable& operator=(const PythonFrameTable&) = delete;

  // The id of the frame `ref` describes, kInternalFrame, or kOverflowFrame past the budget (one
  // warning line the first time). The code object must be alive (it is while the frame that
  // references it runs). kNoFrame if host memory ran out. Inline: a stack
  // interns every frame.
  uint32_t intern(const PythonFrameRef& ref) noexcept {
    const uint32_t known = find(*slots_.load(std::memory_order_acquire), ref);
    return known != kNoFrame ? known : intern_first_sight(ref);
  }

  // A copy of what frame `id` resolved to; empty strings and line -1 for an unknown id.
  PythonFrameInfo describe(uint32_t id) const;
  size_t frame_count() const;
  size_t memory_bytes() const;

 private:
  struct Slot {
    std::atomic<uintptr_t> code{0};  // published last: 0 = empty
    uintptr_t name = 0;
    uintptr_t filename = 0;
    uintptr_t linetable = 0;
    int32_t instruction = 0;
    int32_t firstlineno = 0;
    uint32_t id = 0;
  };
  struct SlotArray {
    explicit SlotArray(size_t capacity) : mask(capacity - 1), slots(new Slot[capacity]) {}
    size_t mask;
    std::unique_ptr<Slot[]> slots;
  };

  static size_t hash_of(const PythonFrameRef& ref) {
    uint64_t h = (static_cast<uint64_t>(ref.code) >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint32_t>(ref.instruction) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  static bool matches(const Slot& slot, const PythonFrameRef& ref) {
    return slot.instruction == ref.instruction && slot.name == ref.name &&
           slot.firstlineno == ref.firstlineno && slot.filename == ref.filename &&
           slot.linetable == ref.linetable;
  }
  static uint32_t find(const SlotArray& slots, const PythonFrameRef& ref) {
    // At most half the slots are used, so every probe sequence reaches an empty slot.
    for (size_t i = hash_of(ref) & slots.mask;; i = (i + 1) & slots.mask) {
      const Slot& slot = slots.slots[i];
      const uintptr_t code = slot.code.load(std::memory_order_acquire);
      if (code == 0) return kNoFrame;
      if (code == ref.code && matches(slot, ref)) return slot.id;
    }
  }
  static void insert(SlotArray& slots, const PythonFrameRef& ref, uint32_t id);
  uint32_t intern_first_sight(const PythonFrameRef& ref) noexcept;
  PythonFrameInfo resolve(const PythonFrameRef& ref) const;
  uint32_t id_for(PythonFrameInfo info);  // requires mutex_
  void grow();                            // requires mutex_
  // Requires mutex_: whether one more key, and `info` as a new location, fit in the budget.
  bool fits_budget(const PythonFrameInfo& info) const;

  const PythonLayout layout_;
  std::atomic<SlotArray*> slots_;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<SlotArray>> slot_arrays_;  // the current one last; readers may still
                                                         // probe older ones
  std::vector<std::pair<PythonFrameRef, uint32_t>> keys_;  // every slot's key, for growing
  std::deque<PythonFrameInfo> frames_;                     // by id
  std::unordered_map<std::string, uint32_t> ids_by_location_;
  size_t string_bytes_ = 0;
  size_t slot_bytes_ = 0;  // every slot array's, the older ones included
  const size_t budget_bytes_;
  std::atomic<bool> past_budget_{false};  // then frames not seen before are not even read
};

}  // namespace vramshim::python
