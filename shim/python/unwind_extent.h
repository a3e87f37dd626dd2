// The extent of the code one unwind-table entry covers: a whole function, or one of the parts a
// compiler split it into (GCC's hot/cold partitioning gives "f" and an unnamed "f.cold" one entry
// each).
#pragma once

#include <cstdint>
#include <optional>

namespace vramshim::python {

struct CodeExtent {
  uintptr_t begin = 0;
  uintptr_t end = 0;  // past the last instruction
};

// The extent of the .eh_frame entry (FDE) that covers `address`, found through the binary search
// table of its module's .eh_frame_hdr. nullopt when no loaded module maps `address`, the module has
// no search table, or no entry covers it. Walks the loaded objects (dl_iterate_phdr): not for
// every allocation.
std::optional<CodeExtent> unwind_extent_of(uintptr_t address);

}  // namespace vramshim::python
