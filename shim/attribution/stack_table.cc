#include "shim/attribution/stack_table.h"

#include <algorithm>
#include <cstring>

#include "shim/attribution/stack_capture.h"
#include "shim/control/log.h"

namespace vramshim::attribution {
namespace {

constexpr size_t kInitialSlots = 1024;

// wyhash's mixing step: the 128-bit product of a and b, folded.
uint64_t mix(uint64_t a, uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

// Two frames per product and two chains of products, so that the multiplies of one chain overlap
// those of the other; each step keys its frames with the chain's state, so order matters. No frame
// equals a secret (which would zero a product): user-space return addresses are below 2^47 and
// Python frames (python_frame_tag.h) have bits 62..32 clear.
uint64_t hash_frames(const uint64_t* frames, int depth) {
  constexpr uint64_t kSecret[4] = {
      // wyhash's default secrets
      0xa0761d6478bd642fULL, 0xe7037ed1a0b428dbULL, 0x8ebc6af09c88c6e3ULL, 0x589965cc75374cc3ULL};
  uint64_t even = kSecret[0] ^ static_cast<uint64_t>(depth);
  uint64_t odd = kSecret[1];
  int i = 0;
  for (; i + 4 <= depth; i += 4) {
    even = mix(frames[i] ^ kSecret[2], frames[i + 1] ^ even);
    odd = mix(frames[i + 2] ^ kSecret[3], frames[i + 3] ^ odd);
  }
  for (; i < depth; ++i) even = mix(frames[i] ^ kSecret[2], even ^ kSecret[3]);
  return mix(even ^ kSecret[3], odd ^ kSecret[2]);
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

StackTable::StackTable(size_t budget_bytes)
    : slots_(new SlotTable(kInitialSlots)), budget_bytes_(budget_bytes) {}

StackTable::~StackTable() {
  delete slots_.load(std::memory_order_relaxed);
  for (SlotTable* table : retired_slot_tables_) delete table;
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
    if (record.hash == hash && record.depth == static_cast<uint32_t>(depth) &&
        std::memcmp(record.addresses, frames, sizeof(uint64_t) * depth) == 0) {
      return stack;
    }
  }
}

uint32_t StackTable::intern(const uint64_t* frames, int depth) {
  static_assert(kArenaChunk > StackCapture::kMaxDepth, "a stack and its cut frame fit in a chunk");
  const uint64_t hash = hash_frames(frames, depth);
  const uint32_t known = find(*slots_.load(std::memory_order_acquire), hash, frames, depth);
  if (known != kAbsent) return known;
  if (past_budget_.load(std::memory_order_acquire)) {
    // The table probed may have been an older one, grown since: the current one decides.
    const uint32_t grown = find(*slots_.load(std::memory_order_acquire), hash, frames, depth);
    if (grown != kAbsent) return grown;
    past_budget_count_.fetch_add(1, std::memory_order_relaxed);
    return overflow_stack_;
  }

  std::lock_guard<std::mutex> lock(intern_mutex_);
  const uint32_t raced = find(*slots_.load(std::memory_order_relaxed), hash, frames, depth);
  if (raced != kAbsent) return raced;
  if (past_budget_.load(std::memory_order_relaxed) || !fits_budget(depth)) {
    past_budget_count_.fetch_add(1, std::memory_order_relaxed);
    return overflow_stack();
  }
  // Its new frames are known by the loads that map them now, before they can be unloaded.
  modules_.refresh();
  return add_stack(hash, frames, depth);
}

uint32_t StackTable::add_stack(uint64_t hash, const uint64_t* frames, int depth) {
  const size_t frames_before = frames_.size();
  const StackRecord record{store_addresses(frames, depth), store_frame_ids(frames, depth),
                           static_cast<uint32_t>(depth), hash};
  const auto stack = static_cast<uint32_t>(stacks_.push_back(record));
  stored_bytes_ += sizeof(StackRecord) + (sizeof(uint64_t) + sizeof(uint32_t)) * depth +
                   (frames_.size() - frames_before) * kFrameBytes;
  SlotTable* table = slots_.load(std::memory_order_relaxed);
  if ((stacks_.size() + 1) * 2 > table->capacity()) {
    grow_slots();
  } else {
    insert_slot(*table, hash, stack);
  }
  return stack;
}

// Counts every frame of the stack as new, and the slot table's growth; the loads the stack's
// refresh may add count from the next stack on.
bool StackTable::fits_budget(int depth) const {
  const size_t slot_capacity = slots_.load(std::memory_order_relaxed)->capacity();
  const size_t slot_bytes = slot_capacity * sizeof(uint64_t) + retired_slot_bytes_;
  const size_t growth =
      (stacks_.size() + 2) * 2 > slot_capacity ? 2 * slot_capacity * sizeof(uint64_t) : 0;
  const size_t stack_bytes =
      sizeof(StackRecord) + (sizeof(uint64_t) + sizeof(uint32_t) + kFrameBytes) * depth;
  return stored_bytes_ + slot_bytes + modules_.memory_bytes() + growth + stack_bytes <=
         budget_bytes_;
}

uint32_t StackTable::overflow_stack() {
  if (!past_budget_.load(std::memory_order_relaxed)) {
    overflow_stack_ = add_stack(hash_frames(&kOverflowAddress, 1), &kOverflowAddress, 1);
    past_budget_.store(true, std::memory_order_release);
    control::log(control::LogLevel::kWarn,
                 "the stacks reached VRAMSHIM_STACK_TABLE (%zu bytes): allocations from new stacks "
                 "are counted under \"%s\"",
                 budget_bytes_, kPastStackTableName);
  }
  return overflow_stack_;
}

const uint64_t* StackTable::store_addresses(const uint64_t* frames, int depth) {
  uint64_t* addresses = address_arena_.allocate(depth);
  std::copy(frames, frames + depth, addresses);
  return addresses;
}

const uint32_t* StackTable::store_frame_ids(const uint64_t* frames, int depth) {
  uint32_t* ids = frame_id_arena_.allocate(depth);
  for (int i = 0; i < depth; ++i) {
    const FrameKey key{frames[i], modules_.module_of(frames[i])};
    const auto known = frame_ids_.find(key);
    if (known != frame_ids_.end()) {
      ids[i] = known->second;
      continue;
    }
    // Published before it is indexed: if indexing throws, the frame is merely stored twice.
    ids[i] = static_cast<uint32_t>(frames_.push_back({key.address, key.module}));
    frame_ids_.emplace(key, ids[i]);
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

StackTable::Modules StackTable::modules() const {
  std::lock_guard<std::mutex> lock(intern_mutex_);
  modules_.refresh();
  Modules modules{modules_.loads(), {}, frames_.size()};
  modules.loaded.resize(modules.loads.size());
  for (size_t i = 0; i < modules.loads.size(); ++i) {
    modules.loaded[i] = modules_.is_loaded(static_cast<uint32_t>(i));
  }
  return modules;
}

size_t StackTable::memory_bytes() const {
  std::lock_guard<std::mutex> lock(intern_mutex_);
  // An unordered_map node holds the pair and a next pointer; each bucket is one pointer.
  const size_t address_index =
      frame_ids_.size() * (sizeof(FrameKey) + sizeof(uint32_t) + sizeof(void*)) +
      frame_ids_.bucket_count() * sizeof(void*);
  return stacks_.allocated_bytes() + frames_.allocated_bytes() + address_arena_.allocated_bytes() +
         frame_id_arena_.allocated_bytes() + address_index +
         slots_.load(std::memory_order_relaxed)->capacity() * sizeof(uint64_t) +
         retired_slot_bytes_;
}

}  // namespace vramshim::attribution
