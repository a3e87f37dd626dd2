#include "shim/pool/free_bins.h"

#include "shim/support/room_for_one_more.h"

namespace vramshim::pool {

FreeBins::FreeBins() : nonempty_{}, nonempty_words_{} {}

size_t FreeBins::class_of(size_t size) {
  const size_t units = size / kGranularity;
  if (units <= kExactClasses) return units - 1;
  // The octave, then its top kSubClassBits bits below the leading one.
  const int octave = 63 - __builtin_clzll(units);
  const size_t sub = (units >> (octave - kSubClassBits)) - kSubClasses;
  return kExactClasses + static_cast<size_t>(octave - kExactOctave) * kSubClasses + sub;
}

void FreeBins::insert(Block* block) {
  const size_t index = class_of(block->size);
  if (index >= classes_.size()) classes_.resize(index + 1);
  SizeClass& size_class = classes_[index];
  size_class.push_back(block);
  if (is_exact(index)) {
    block->free_slot = static_cast<uint32_t>(size_class.size() - 1);
  } else {
    sift_up(size_class, size_class.size() - 1);
  }
  if (size_class.size() == 1) mark_nonempty(index);
}

void FreeBins::make_room_for(size_t size) {
  const size_t index = class_of(size);
  if (index >= classes_.size()) classes_.resize(index + 1);
  support::make_room_for_one_more(classes_[index]);
}

void FreeBins::erase(Block* block) {
  const size_t index = class_of(block->size);
  SizeClass& size_class = classes_[index];
  const size_t slot = block->free_slot;
  Block* last = size_class.back();
  size_class.pop_back();
  if (slot < size_class.size()) {
    place(size_class, slot, last);
    // An exact class has no order to keep; a heap restores its order around the slot.
    if (!is_exact(index)) {
      if (slot > 0 && before(last, size_class[(slot - 1) / 2])) {
        sift_up(size_class, slot);
      } else {
        sift_down(size_class, slot);
      }
    }
  }
  if (size_class.empty()) mark_empty(index);
}

Block* FreeBins::best_fit(size_t size) const {
  // Only the size's own class may hold blocks too small (a heap's, not an exact one's); every
  // block of a later class is larger.
  const size_t index = class_of(size);
  if (index < classes_.size()) {
    const SizeClass& size_class = classes_[index];
    Block* fit = is_exact(index) ? first(size_class, index) : first_at_least(size_class, size);
    if (fit != nullptr) return fit;
  }
  const size_t next = next_nonempty_class(index + 1);
  return next == kClasses ? nullptr : first(classes_[next], next);
}

void FreeBins::clear() {
  for (size_t index = next_nonempty_class(0); index < kClasses;
       index = next_nonempty_class(index + 1)) {
    classes_[index].clear();  // keeps the array for the class's next blocks
  }
  for (uint64_t& word : nonempty_) word = 0;
  for (uint64_t& word : nonempty_words_) word = 0;
}

Block* FreeBins::first(const SizeClass& size_class, size_t index) {
  if (size_class.empty()) return nullptr;
  return is_exact(index) ? size_class.back() : size_class.front();
}

Block* FreeBins::first_at_least(const SizeClass& heap, size_t size) {
  Block* best = nullptr;
  if (!heap.empty()) search(heap, 0, size, &best);
  return best;
}

void FreeBins::search(const SizeClass& heap, size_t slot, size_t size, Block** best) {
  // A heap's block comes first in its subtree: once it fits, or once it does not come before the
  // best fit found so far, nothing below it can do better.
  if (slot >= heap.size()) return;
  Block* block = heap[slot];
  if (*best != nullptr && !before(block, *best)) return;
  if (block->size >= size) {
    *best = block;
    return;
  }
  search(heap, 2 * slot + 1, size, best);
  search(heap, 2 * slot + 2, size, best);
}

void FreeBins::place(SizeClass& size_class, size_t slot, Block* block) {
  size_class[slot] = block;
  block->free_slot = static_cast<uint32_t>(slot);
}

void FreeBins::sift_up(SizeClass& heap, size_t slot) {
  Block* moving = heap[slot];
  while (slot > 0) {
    const size_t parent = (slot - 1) / 2;
    if (!before(moving, heap[parent])) break;
    place(heap, slot, heap[parent]);
    slot = parent;
  }
  place(heap, slot, moving);
}

void FreeBins::sift_down(SizeClass& heap, size_t slot) {
  Block* moving = heap[slot];
  for (;;) {
    size_t child = 2 * slot + 1;
    if (child >= heap.size()) break;
    if (child + 1 < heap.size() && before(heap[child + 1], heap[child])) ++child;
    if (!before(heap[child], moving)) break;
    place(heap, slot, heap[child]);
    slot = child;
  }
  place(heap, slot, moving);
}

size_t FreeBins::next_nonempty_class(size_t from) const {
  size_t word = from / 64;
  if (word >= kWords) return kClasses;
  uint64_t bits = nonempty_[word] & (~uint64_t{0} << (from % 64));
  if (bits == 0) {
    // The next non-empty word, from the summary.
    const size_t after = word + 1;
    word = kWords;
    for (size_t summary = after / 64; summary < kSummaryWords; ++summary) {
      uint64_t words = nonempty_words_[summary];
      if (summary == after / 64) words &= ~uint64_t{0} << (after % 64);
      if (words != 0) {
        word = summary * 64 + static_cast<size_t>(__builtin_ctzll(words));
        break;
      }
    }
    if (word == kWords) return kClasses;
    bits = nonempty_[word];
  }
  return word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
}

void FreeBins::mark_nonempty(size_t index) {
  nonempty_[index / 64] |= uint64_t{1} << (index % 64);
  nonempty_words_[index / 64 / 64] |= uint64_t{1} << (index / 64 % 64);
}

void FreeBins::mark_empty(size_t index) {
  uint64_t& word = nonempty_[index / 64];
  word &= ~(uint64_t{1} << (index % 64));
  if (word == 0) nonempty_words_[index / 64 / 64] &= ~(uint64_t{1} << (index / 64 % 64));
}

}  // namespace vramshim::pool
