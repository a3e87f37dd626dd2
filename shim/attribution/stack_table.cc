#include "shim/attribution/stack_table.h"

#include "shim/attribution/stack_capture.h"

namespace vramshim::attribution {
namespace {

constexpr size_t kFrameIdChunk = 64 * 1024;  // frame ids per arena chunk
constexpr size_t kInitialSlots = 1024;
static_assert(kFrameIdChunk >= StackCapture::kMaxDepth, "a stack fits in one chunk");

uint64_t hash_frames(const uint64_t* frames, int depth) {
  uint64_t hash = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(depth);
  for (int i = 0; i < depth; ++i) {
    hash = (hash ^ frames[i]) * 0xff51afd7ed558ccdULL;
    hash ^= hash >> 29;
  }
  hash ^= hash >> 32;
  hash *= 0xc4ceb9fe1a85ec53ULL;
  hash ^= hash >> 29;
  return hash;
}

// A slot holds (upper 32 bits of the stack's hash) << 32 | (stack id + 1); 0 marks an empty slot.
uint64_t slot_value(uint64_t hash, uint32_t stack) {
  return (hash & 0xffffffff00000000ULL) | (uint64_t{stack} + 1);
}

}  // namespace

struct StackTable::SlotTable {
  explicit SlotTable(size_t capacity)
      : mask(capacity - 1), slots(new std::atomic<uint64_t>[capacity]()) {}
  ~SlotTable() { delete[] slots; }
  size_t capacity() const { return mask + 1; }

  const size_t mask;
  std::atomic<uint64_t>* const slots;
};

StackTable::StackTable() : slots_(new SlotTable(kInitialSlots)) {}

StackTable::~StackTable() {
  delete slots_.load(std::memory_order_relaxed);
  for (SlotTable* table : retired_slot_tables_) delete table;
  for (uint32_t* chunk : frame_id_chunks_) delete[] chunk;
}

StackTable::Frames StackTable::frames_of(uint32_t stack) const {
  const StackRecord& record = stacks_[stack];
  return {record.frame_ids, record.depth};
}

uint32_t StackTable::find(const SlotTable& table, uint64_t hash, const uint64_t* frames,
                          int depth) const {
  for (size_t i = hash & table.mask;; i = (i + 1) & table.mask) {
    const uint64_t slot = table.slots[i].load(std::memory_order_acquire);
    if (slot == 0) return kAbsent;
    if ((slot ^ hash) >> 32 != 0) continue;
    const auto stack = static_cast<uint32_t>(slot) - 1;
    const StackRecord& record = stacks_[stack];
    if (record.hash != hash || record.depth != static_cast<uint32_t>(depth)) continue;
    bool same = true;
    for (int f = 0; f < depth && same; ++f) {
      same = frame_addresses_[record.frame_ids[f]] == frames[f];
    }
    if (same) return stack;
  }
}

uint32_t StackTable::intern(const uint64_t* frames, int depth) {
  const uint64_t hash = hash_frames(frames, depth);
  const uint32_t known = find(*slots_.load(std::memory_order_acquire), hash, frames, depth);
  if (known != kAbsent) return known;

  std::lock_guard<std::mutex> lock(intern_mutex_);
  SlotTable* table = slots_.load(std::memory_order_relaxed);
  const uint32_t raced = find(*table, hash, frames, depth);
  if (raced != kAbsent) return raced;

  const StackRecord record{store_frame_ids(frames, depth), static_cast<uint32_t>(depth), hash};
  const auto stack = static_cast<uint32_t>(stacks_.push_back(record));
  if ((stacks_.size() + 1) * 2 > table->capacity()) {
    grow_slots();
  } else {
    insert_slot(*table, hash, stack);
  }
  return stack;
}

uint32_t* StackTable::store_frame_ids(const uint64_t* frames, int depth) {
  if (frame_id_chunks_.empty() || chunk_used_ + depth > kFrameIdChunk) {
    frame_id_chunks_.push_back(new uint32_t[kFrameIdChunk]);
    chunk_used_ = 0;
  }
  uint32_t* ids = frame_id_chunks_.back() + chunk_used_;
  chunk_used_ += depth;
  for (int i = 0; i < depth; ++i) {
    const auto known = frame_ids_by_address_.find(frames[i]);
    if (known != frame_ids_by_address_.end()) {
      ids[i] = known->second;
      continue;
    }
    // Published before it is indexed: if indexing throws, the address is merely stored twice.
    ids[i] = static_cast<uint32_t>(frame_addresses_.push_back(frames[i]));
    frame_ids_by_address_.emplace(frames[i], ids[i]);
  }
  return ids;
}

void StackTable::insert_slot(SlotTable& table, uint64_t hash, uint32_t stack) {
  size_t i = hash & table.mask;
  while (table.slots[i].load(std::memory_order_relaxed) != 0) i = (i + 1) & table.mask;
  table.slots[i].store(slot_value(hash, stack), std::memory_order_release);
}

// Builds a table twice as large holding every stack, then publishes it. Readers still probing the
// old one at worst miss a stack and retry under the lock, so the old table is kept, not freed.
void StackTable::grow_slots() {
  SlotTable* old_table = slots_.load(std::memory_order_relaxed);
  auto* grown = new SlotTable(old_table->capacity() * 2);
  const size_t count = stacks_.size();
  for (size_t stack = 0; stack < count; ++stack) {
    insert_slot(*grown, stacks_[stack].hash, static_cast<uint32_t>(stack));
  }
  slots_.store(grown, std::memory_order_release);
  retired_slot_tables_.push_back(old_table);
  retired_slot_bytes_ += old_table->capacity() * sizeof(uint64_t);
}

size_t StackTable::memory_bytes() const {
  std::lock_guard<std::mutex> lock(intern_mutex_);
  // An unordered_map node holds the pair and a next pointer; each bucket is one pointer.
  const size_t address_index =
      frame_ids_by_address_.size() * (sizeof(uint64_t) * 2 + sizeof(void*)) +
      frame_ids_by_address_.bucket_count() * sizeof(void*);
  return stacks_.allocated_bytes() + frame_addresses_.allocated_bytes() +
         frame_id_chunks_.size() * kFrameIdChunk * sizeof(uint32_t) + address_index +
         slots_.load(std::memory_order_relaxed)->capacity() * sizeof(uint64_t) +
         retired_slot_bytes_;
}

}  // namespace vramshim::attribution
