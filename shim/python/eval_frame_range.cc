#include "shim/python/eval_frame_range.h"

#include <dlfcn.h>
#include <link.h>

#include "shim/python/frames_holding.h"
#include "shim/python/unwind_extent.h"

namespace vramshim::python {

EvalFrameRange EvalFrameRange::of_function(const void* function) {
  if (function == nullptr) return {};
  Dl_info info;
  void* symbol_entry = nullptr;
  if (dladdr1(function, &info, &symbol_entry, RTLD_DL_SYMENT) == 0 || symbol_entry == nullptr ||
      info.dli_saddr != function) {
    return {};
  }
  const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
  if (symbol->st_size == 0) return {};
  const auto begin = reinterpret_cast<uintptr_t>(function);
  return {begin, begin + symbol->st_size};
}

namespace {

// The base address of the loaded object that maps `address`, or null.
const void* module_of(uintptr_t address) {
  Dl_info info;
  return dladdr(reinterpret_cast<const void*>(address), &info) != 0 ? info.dli_fbase : nullptr;
}

}  // namespace

bool EvalFrameRange::learn_parts_holding(const uintptr_t* locals, int count) {
  if (!known()) return false;
  constexpr int kMaxLocals = 64;
  if (count > kMaxLocals) count = kMaxLocals;
  uintptr_t return_addresses[kMaxLocals];
  frames_holding(locals, count, return_addresses);
  const void* const module = module_of(begin_);
  bool added = false;
  for (int i = 0; i < count; ++i) {
    const uintptr_t address = return_addresses[i];
    if (address == 0 || contains_return_address(address) || module_of(address) != module) continue;
    // The call instruction lies before the return address, in the part being looked for.
    const std::optional<CodeExtent> part = unwind_extent_of(address - 1);
    if (part) added |= add_part(part->begin, part->end);
  }
  return added;
}

bool EvalFrameRange::add_part(uintptr_t begin, uintptr_t end) {
  std::lock_guard<std::mutex> lock(adding_);
  const int parts = part_count_.load(std::memory_order_relaxed);
  if (parts == kMaxParts) return false;
  for (int i = 0; i < parts; ++i) {
    if (part_begin_[i].load(std::memory_order_relaxed) == begin) return false;
  }
  part_begin_[parts].store(begin, std::memory_order_relaxed);
  part_end_[parts].store(end, std::memory_order_relaxed);
  part_count_.store(parts + 1, std::memory_order_release);
  return true;
}

}  // namespace vramshim::python
