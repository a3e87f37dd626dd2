#include "shim/python/python_frame_table.h"

#include <new>

#include "shim/control/log.h"
#include "shim/python/line_table.h"
#include "shim/python/object_reader.h"

namespace vramshim::python {

namespace {

constexpr size_t kInitialSlots = 1024;
constexpr size_t kMaxLineTableBytes = size_t{1} << 24;
// A location's entry in ids_by_location_ beyond its key's characters: a node (the pair, a next
// pointer, the cached hash) and its bucket pointer.
constexpr size_t kLocationEntryBytes = sizeof(std::string) + sizeof(uint32_t) + 3 * sizeof(void*);

}  // namespace

PythonFrameTable::PythonFrameTable(const PythonLayout& layout, size_t budget_bytes)
    : layout_(layout), budget_bytes_(budget_bytes) {
  slot_arrays_.push_back(std::make_unique<SlotArray>(kInitialSlots));
  slot_bytes_ = kInitialSlots * sizeof(Slot);
  slots_.store(slot_arrays_.back().get(), std::memory_order_release);
}

PythonFrameTable::~PythonFrameTable() = default;

void PythonFrameTable::insert(SlotArray& slots, const PythonFrameRef& ref, uint32_t id) {
  size_t i = hash_of(ref) & slots.mask;
  while (slots.slots[i].code.load(std::memory_order_relaxed) != 0) i = (i + 1) & slots.mask;
  Slot& slot = slots.slots[i];
  slot.name = ref.name;
  slot.filename = ref.filename;
  slot.linetable = ref.linetable;
  slot.instruction = ref.instruction;
  slot.firstlineno = ref.firstlineno;
  slot.id = id;
  slot.code.store(ref.code, std::memory_order_release);
}

uint32_t PythonFrameTable::intern_first_sight(const PythonFrameRef& ref) noexcept {
  if (past_budget_.load(std::memory_order_relaxed)) return kOverflowFrame;
  try {
    PythonFrameInfo info = resolve(ref);  // reads the code object: outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    SlotArray& slots = *slot_arrays_.back();
    const uint32_t raced = find(slots, ref);
    if (raced != kNoFrame) return raced;
    if (!fits_budget(info)) {
      if (!past_budget_.exchange(true, std::memory_order_relaxed)) {
        control::log(control::LogLevel::kWarn,
                     "the Python frames reached VRAMSHIM_STACK_TABLE (%zu bytes): new ones are "
                     "named \"%s\"",
                     budget_bytes_, attribution::kPastStackTableName);
      }
      return kOverflowFrame;
    }
    // A real file is a path ("…/__init__.py"); only CPython's own code is named "__init__" there.
    const bool internal = info.file == "__init__" && info.function == "__init__";
    const uint32_t id = internal ? kInternalFrame : id_for(std::move(info));
    keys_.emplace_back(ref, id);
    if (keys_.size() * 2 > slots.mask + 1) {
      grow();  // inserts every key, this one included
    } else {
      insert(slots, ref, id);
    }
    return id;
  } catch (const std::bad_alloc&) {
    return kNoFrame;
  }
}

uint32_t PythonFrameTable::id_for(PythonFrameInfo info) {
  std::string location = info.file;
  location.push_back('\0');
  location += info.function;
  location.push_back('\0');
  location += std::to_string(info.line);
  const auto found = ids_by_location_.find(location);
  if (found != ids_by_location_.end()) return found->second;
  const auto id = static_cast<uint32_t>(frames_.size());
  string_bytes_ += 2 * location.size();
  frames_.push_back(std::move(info));
  ids_by_location_.emplace(std::move(location), id);
  return id;
}

void PythonFrameTable::grow() {
  const size_t capacity = 2 * (slot_arrays_.back()->mask + 1);
  auto bigger = std::make_unique<SlotArray>(capacity);
  for (const auto& [ref, id] : keys_) insert(*bigger, ref, id);
  SlotArray* published = bigger.get();
  slot_arrays_.push_back(std::move(bigger));  // kept before it is published, should this throw
  slots_.store(published, std::memory_order_release);
  slot_bytes_ += capacity * sizeof(Slot);
}

// Counts the location as new and the slot arrays' growth.
bool PythonFrameTable::fits_budget(const PythonFrameInfo& info) const {
  const size_t capacity = slot_arrays_.back()->mask + 1;
  const size_t growth = (keys_.size() + 1) * 2 > capacity ? 2 * capacity * sizeof(Slot) : 0;
  const size_t location_bytes = 2 * (info.file.size() + info.function.size() + 16) +
                                sizeof(PythonFrameInfo) + kLocationEntryBytes;
  const size_t used = string_bytes_ +
                      frames_.size() * (sizeof(PythonFrameInfo) + kLocationEntryBytes) +
                      keys_.size() * sizeof(keys_[0]) + slot_bytes_;
  return used + growth + sizeof(keys_[0]) + location_bytes <= budget_bytes_;
}

PythonFrameInfo PythonFrameTable::resolve(const PythonFrameRef& ref) const {
  PythonFrameInfo info;
  info.file = read_str(layout_, read_field<uintptr_t>(ref.code, layout_.code_filename));
  info.function = read_str(layout_, ref.name);
  if (ref.instruction < 0) {
    info.line = ref.firstlineno;  // not started yet: CPython reports the first line too
    return info;
  }
  const ByteView table = read_bytes(
      layout_, read_field<uintptr_t>(ref.code, layout_.code_linetable), kMaxLineTableBytes);
  info.line =
      layout_.line_table == LineTableFormat::kLineDeltas
          ? line_from_line_deltas(table.data, table.size, ref.firstlineno, 2 * ref.instruction)
          : line_from_locations(table.data, table.size, ref.firstlineno, ref.instruction);
  return info;
}

PythonFrameInfo PythonFrameTable::describe(uint32_t id) const {
  if (id == kOverflowFrame) return {"", attribution::kPastStackTableName, -1};
  std::lock_guard<std::mutex> lock(mutex_);
  if (id >= frames_.size()) return {};
  return frames_[id];
}

size_t PythonFrameTable::frame_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return frames_.size();
}

size_t PythonFrameTable::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return string_bytes_ + frames_.size() * sizeof(PythonFrameInfo) +
         keys_.capacity() * sizeof(keys_[0]) + slot_bytes_;
}

}  // namespace vramshim::python
