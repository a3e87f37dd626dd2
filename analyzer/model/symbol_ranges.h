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

  // The name dwfl_module_addrname gives `address` (a libdwfl address), or null: of the sized
  // symbols holding it, a global or weak one before a local one, then the one starting closest
  // below it, then the better binding, the smaller, the first in the table; without one, the
  // closest sizeless symbol (an assembly label) below it in its section that no sized symbol
  // spans. The name lives as long as the module.
  const char* find(Dwarf_Addr address) const;

 private:
  struct Symbol {
    Dwarf_Addr begin = 0;
    Dwarf_Addr end = 0;    // past the last address; == begin for a sizeless one
    Dwarf_Addr reach = 0;  // the largest end of this symbol and all that sort before it
    int binding = 0;       // higher is better: global 3, weak 2, local 1, other 0
    uint32_t index = 0;    // in the symbol table
    uint32_t section = 0;  // its section's index (sizeless symbols only)
    const char* name = nullptr;
  };
  // Sorted by begin, then the better candidate last (found first walking back).
  static void sort(std::vector<Symbol>& symbols);
  static const Symbol* holding(const std::vector<Symbol>& symbols, Dwarf_Addr address);
  const char* sizeless_below(Dwarf_Addr address) const;

  Dwfl_Module* module_;
  std::vector<Symbol> global_;    // sized, global or weak
  std::vector<Symbol> local_;     // sized, the others
  std::vector<Symbol> sizeless_;  // with no size, any binding
  std::vector<Symbol> sized_;     // global_ and local_ together, for the sizeless rule
};

}  // namespace vramshim::analyzer
