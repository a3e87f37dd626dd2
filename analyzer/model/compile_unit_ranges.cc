#include "analyzer/model/compile_unit_ranges.h"

#include <elfutils/libdw.h>

#include <algorithm>

namespace vramshim::analyzer {

CompileUnitRanges::CompileUnitRanges(Dwfl_Module* module) {
  Dwarf_Addr bias = 0;
  for (Dwarf_Die* unit = dwfl_module_nextcu(module, nullptr, &bias); unit != nullptr;
       unit = dwfl_module_nextcu(module, unit, &bias)) {
    Dwarf_Addr base = 0;
    Dwarf_Addr begin = 0;
    Dwarf_Addr end = 0;
    for (ptrdiff_t next = dwarf_ranges(unit, 0, &base, &begin, &end); next > 0;
         next = dwarf_ranges(unit, next, &base, &begin, &end)) {
      // The linker leaves the ranges of code it discarded at address 0.
      if (begin < end && begin != 0) ranges_.push_back({begin + bias, end + bias, 0, unit, bias});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  Dwarf_Addr reach = 0;
  for (Range& range : ranges_) {
    reach = std::max(reach, range.end);
    range.reach = reach;
  }
}

Dwarf_Die* CompileUnitRanges::find(Dwarf_Addr address, Dwarf_Addr* bias) const {
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                                [](Dwarf_Addr a, const Range& range) { return a < range.begin; });
  // Ranges may overlap: walk back while an earlier range can still reach the address.
  while (after != ranges_.begin() && std::prev(after)->reach > address) {
    --after;
    if (address < after->end) {
      *bias = after->bias;
      return after->unit;
    }
  }
  return nullptr;
}

}  // namespace vramshim::analyzer
