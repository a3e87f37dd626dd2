// A module's compile units by address, read from their DWARF ranges. libdw 0.188 finds the unit of
// an address only through .debug_aranges, which clang, icpx and rustc do not write: without this
// table their binaries have no lines and no inlined frames.
#pragma once

#include <elfutils/libdwfl.h>

#include <vector>

namespace vramshim::analyzer {

class CompileUnitRanges {
 public:
  // Reads the ranges of every compile unit of `module`, as libdwfl addresses (bias added).
  explicit CompileUnitRanges(Dwfl_Module* module);

  // The compile unit whose ranges hold `address` (a libdwfl address), with the bias to subtract
  // for its DWARF addresses in *bias; null when none does. The DIE lives as long as the module.
  Dwarf_Die* find(Dwarf_Addr address, Dwarf_Addr* bias) const;

 private:
  struct Range {
    Dwarf_Addr begin = 0;
    Dwarf_Addr end = 0;    // past the last address
    Dwarf_Addr reach = 0;  // the largest end of this range and all that sort before it
    Dwarf_Die* unit = nullptr;
    Dwarf_Addr bias = 0;
  };
  std::vector<Range> ranges_;  // by begin
};

}  // namespace vramshim::analyzer
