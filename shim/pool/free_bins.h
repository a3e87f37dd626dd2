// The free blocks of one of a pool's two free sets, in size classes: an ordered set's best fit in a
// few word operations instead of a tree walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shim/pool/block.h"
#include "shim/pool/size_policy.h"

namespace vramshim::pool {

// Free blocks (sizes multiples of 512 B) by size class. Up to 1 MiB, every size a small request can
// have, each class is one exact size, kept in no order: a block joins at the end, is handed out
// from the end (often the block freed last, whose memory the device is the likeliest to cache),
// and leaves from the middle by moving the last block into its slot. Above, each power of two is
// cut into 64 classes (a class spans under 1.6 % of its sizes), each a binary min-heap by (size,
// address). A bitmap of the non-empty classes, and a bitmap of its non-empty words above it, finds
// the first non-empty class from any class in a few word operations. A free block keeps its slot
// in its class (Block::free_slot), so insert and erase cost O(1) in an exact class and O(log k) in
// the k blocks of a heap, and allocate nothing once that class's array has grown.
//
// best_fit gives the smallest block of at least the size, as lower_bound does on a set ordered by
// (size, address); among blocks of that size, the lowest address above 1 MiB, any one up to it.
class FreeBins {
 public:
  FreeBins();

  void insert(Block* block);
  // Allocates now what inserting one block of `size` bytes would, so that the insert cannot fail.
  void make_room_for(size_t size);
  // `block` must be in the bins, with the size it was inserted with.
  void erase(Block* block);
  // The best-fitting free block of at least `size` bytes (left in the bins), or nullptr.
  Block* best_fit(size_t size) const;
  // Calls visit(Block*) for every block, in no particular order; the bins must not change
  // meanwhile.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (size_t index = next_nonempty_class(0); index < kClasses;
         index = next_nonempty_class(index + 1)) {
      for (Block* block : classes_[index]) visit(block);
    }
  }
  void clear();

 private:
  static constexpr size_t kGranularity = SizePolicy::kGranularity;
  static constexpr int kExactOctave = 11;
  static constexpr size_t kExactClasses = size_t{1} << kExactOctave;
  static_assert(kExactClasses * kGranularity == SizePolicy::kSmallRequestMax,
                "an exact class for every small request");
  static constexpr int kSubClassBits = 6;
  static constexpr size_t kSubClasses = size_t{1} << kSubClassBits;
  // A size_t counts up to 2^55 units of 512 B: octaves kExactOctave .. 54.
  static constexpr size_t kClasses = kExactClasses + (55 - kExactOctave) * kSubClasses;
  static constexpr size_t kWords = (kClasses + 63) / 64;
  static constexpr size_t kSummaryWords = (kWords + 63) / 64;

  using SizeClass = std::vector<Block*>;  // unordered (exact classes) or a heap (the others)

  static size_t class_of(size_t size);
  static bool is_exact(size_t index) { return index < kExactClasses; }
  static bool before(const Block* a, const Block* b) {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
  // The block to take from class `index` when all of its blocks fit: an exact class's last, a
  // heap's top; nullptr when the class is empty.
  static Block* first(const SizeClass& size_class, size_t index);
  // The first block of at least `size` bytes in `heap`, in (size, address) order, or nullptr.
  static Block* first_at_least(const SizeClass& heap, size_t size);
  static void search(const SizeClass& heap, size_t slot, size_t size, Block** best);
  // Puts `block` at `slot`, and tells it so.
  static void place(SizeClass& size_class, size_t slot, Block* block);
  static void sift_up(SizeClass& heap, size_t slot);
  static void sift_down(SizeClass& heap, size_t slot);

  // The first non-empty class from `from` on; kClasses when there is none.
  size_t next_nonempty_class(size_t from) const;
  void mark_nonempty(size_t index);
  void mark_empty(size_t index);

  std::vector<SizeClass> classes_;  // grown to the highest class used so far
  uint64_t nonempty_[kWords];
  uint64_t nonempty_words_[kSummaryWords];
};

}  // namespace vramshim::pool
