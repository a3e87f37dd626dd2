#include "analyzer/model/symbol_ranges.h"

#include <gelf.h>

#include <algorithm>
#include <iterator>

namespace vramshim::analyzer {
namespace {

int binding_value(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

SymbolRanges::SymbolRanges(Dwfl_Module* module) : module_(module) {
  const int count = dwfl_module_getsymtab(module);
  for (int i = 1; i < count; ++i) {  // symbol 0 is the null symbol
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section = 0;
    const char* name =
        dwfl_module_getsym_info(module, i, &symbol, &address, &section, nullptr, nullptr);
    if (name == nullptr || *name == '\0' || section == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (type == STT_SECTION || type == STT_FILE || type == STT_TLS) continue;
    const Symbol entry{address,
                       address + symbol.st_size,
                       0,
                       binding_value(symbol.st_info),
                       static_cast<uint32_t>(i),
                       section,
                       name};
    if (symbol.st_size == 0) {
      sizeless_.push_back(entry);
    } else {
      (entry.binding >= 2 ? global_ : local_).push_back(entry);
      sized_.push_back(entry);
    }
  }
  for (auto* symbols : {&global_, &local_, &sizeless_, &sized_}) sort(*symbols);
}

void SymbolRanges::sort(std::vector<Symbol>& symbols) {
  std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.binding != b.binding) return a.binding < b.binding;
    if (a.end != b.end) return a.end > b.end;
    return a.index > b.index;
  });
  Dwarf_Addr reach = 0;
  for (Symbol& symbol : symbols) {
    reach = std::max(reach, symbol.end);
    symbol.reach = reach;
  }
}

const SymbolRanges::Symbol* SymbolRanges::holding(const std::vector<Symbol>& symbols,
                                                  Dwarf_Addr address) {
  auto after =
      std::upper_bound(symbols.begin(), symbols.end(), address,
                       [](Dwarf_Addr a, const Symbol& symbol) { return a < symbol.begin; });
  // Symbols may overlap: walk back while an earlier one can still reach the address.
  while (after != symbols.begin() && std::prev(after)->reach > address) {
    --after;
    if (address < after->end) return &*after;
  }
  return nullptr;
}

const char* SymbolRanges::find(Dwarf_Addr address) const {
  if (const Symbol* symbol = holding(global_, address)) return symbol->name;
  if (const Symbol* symbol = holding(local_, address)) return symbol->name;
  return sizeless_below(address);
}

const char* SymbolRanges::sizeless_below(Dwarf_Addr address) const {
  auto label =
      std::upper_bound(sizeless_.begin(), sizeless_.end(), address,
                       [](Dwarf_Addr a, const Symbol& symbol) { return a < symbol.begin; });
  if (label == sizeless_.begin()) return nullptr;
  --label;
  // A sized symbol starting at or below the address and ending past the label spans it.
  const auto sized =
      std::upper_bound(sized_.begin(), sized_.end(), address,
                       [](Dwarf_Addr a, const Symbol& symbol) { return a < symbol.begin; });
  if (sized != sized_.begin() && std::prev(sized)->reach > label->begin) return nullptr;
  // In the address's section.
  Dwarf_Addr relative = address;
  Dwarf_Addr bias = 0;
  Elf_Scn* section = dwfl_module_address_section(module_, &relative, &bias);
  if (section == nullptr || elf_ndxscn(section) != label->section) return nullptr;
  return label->name;
}

}  // namespace vramshim::analyzer
