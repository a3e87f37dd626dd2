// The address range a loaded ELF object occupies, used to drop the shim's own frames from stacks.
#pragma once

#include <cstdint>

namespace vramshim::attribution {

struct ModuleRange {
  uintptr_t begin = 0;  // lowest address of the object's PT_LOAD segments
  uintptr_t end = 0;    // one past the highest; begin == end means "no module"

  bool contains(uintptr_t address) const { return address >= begin && address < end; }

  // The range of the loaded object (executable or shared library) that maps `address`;
  // empty if no loaded object does. Walks dl_iterate_phdr: call it at init, not per allocation.
  static ModuleRange containing(const void* address);

  // The range of the object this code is linked into: libvramshim.so in production.
  static ModuleRange of_this_module();
};

// How many of the first `count` frames lie inside `module` (frames are innermost first).
int count_leading_frames_in(const uint64_t* frames, int count, ModuleRange module);

}  // namespace vramshim::attribution
