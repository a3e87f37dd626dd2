// A module's ELF symbols by address, for the function a frame without DWARF names lies in, found
// by binary searches as libdwfl's dwfl_module_addrname would find it by walking the whole symbol
// table for each address (a library of 100,000 symbols made 10,000 frames take 19.5 s).
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace vramshim::analyzer {

class SymbolRanges {
 public:
  // Reads the symbols of `module` (its .symtab when it has one, else .dynsym): defined, named,
  // not a section, file or thread-local symbol.
  explicit SymbolRanges(Dwfl_Module* module);

  // The name dwfl_module_addrname gives `address` (a libdwfl address), or null. Like libdwfl, it
  // looks at the table's global part first, then (unless a global label is at the address) its
  // local part: of the sized symbols holding the address, taken in table order, one replaces the
  // one before when it starts closer or binds better (global, weak, local, other), or starts as
  // close and is smaller; without one, the sizeless symbol (an assembly label) starting highest at
  // or below it, if no symbol starting below it reaches past it and it is in the address's
  // section. The name lives as long as the module.
  const char* find(Dwarf_Addr address) const;

 private:
  struct Symbol {
    Dwarf_Addr begin = 0;
    Dwarf_Addr end = 0;    // past the last address; == begin for a sizeless one
    Dwarf_Addr reach = 0;  // the largest end of this symbol and all that sort before it
    int binding = 0;       // higher is better: global 3, weak 2, local 1, other 0
    uint32_t index = 0;    // in the symbol table
    uint32_t section = 0;  // its section's index
    const char* name = nullptr;
  };
  // A part of the table, as libdwfl searches it.
  struct Part {
    std::vector<Symbol> sized;     // by begin
    std::vector<Symbol> sizeless;  // by begin, then table index
    // The largest end of the part's symbols starting at or below `address` (sized or not).
    Dwarf_Addr reach_below(Dwarf_Addr address) const;
    const Symbol* holding(Dwarf_Addr address) const;
    // The sizeless symbol starting highest at or below `address`, the last in the table among
    // those of one start; null when none.
    const Symbol* label_below(Dwarf_Addr address) const;
  };
  static void sort(std::vector<Symbol>& symbols);
  bool in_section_of(const Symbol& symbol, Dwarf_Addr address) const;

  Dwfl_Module* module_;
  Part global_;  // from the table's first global symbol on
  Part local_;   // before it
};

}  // namespace vramshim::analyzer
