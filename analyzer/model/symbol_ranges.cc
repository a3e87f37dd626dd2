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

template <typename Symbol>
auto first_after(const std::vector<Symbol>& symbols, Dwarf_Addr address) {
  return std::upper_bound(symbols.begin(), symbols.end(), address,
                          [](Dwarf_Addr a, const Symbol& symbol) { return a < symbol.begin; });
}

}  // namespace

SymbolRanges::SymbolRanges(Dwfl_Module* module) : module_(module) {
  const int count = dwfl_module_getsymtab(module);
  const int first_global = dwfl_module_getsymtab_first_global(module);
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
    Part& part = first_global >= 0 && i >= first_global ? global_ : local_;
    (symbol.st_size == 0 ? part.sizeless : part.sized).push_back(entry);
  }
  for (Part* part : {&global_, &local_}) {
    sort(part->sized);
    sort(part->sizeless);
  }
}

void SymbolRanges::sort(std::vector<Symbol>& symbols) {
  std::sort(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.index < b.index;
  });
  Dwarf_Addr reach = 0;
  for (Symbol& symbol : symbols) {
    reach = std::max(reach, symbol.end);
    symbol.reach = reach;
  }
}

Dwarf_Addr SymbolRanges::Part::reach_below(Dwarf_Addr address) const {
  Dwarf_Addr reach = 0;
  for (const std::vector<Symbol>* symbols : {&sized, &sizeless}) {
    const auto after = first_after(*symbols, address);
    if (after != symbols->begin()) reach = std::max(reach, std::prev(after)->reach);
  }
  return reach;
}

const SymbolRanges::Symbol* SymbolRanges::Part::holding(Dwarf_Addr address) const {
  // Every sized symbol holding the address: walk back while an earlier one can still reach it.
  std::vector<const Symbol*> holders;
  for (auto after = first_after(sized, address);
       after != sized.begin() && std::prev(after)->reach > address;) {
    --after;
    if (address < after->end) holders.push_back(&*after);
  }
  std::sort(holders.begin(), holders.end(),
            [](const Symbol* a, const Symbol* b) { return a->index < b->index; });
  // libdwfl's choice, in table order.
  const Symbol* best = nullptr;
  for (const Symbol* symbol : holders) {
    const uint64_t size = symbol->end - symbol->begin;
    if (best == nullptr || best->begin < symbol->begin || best->binding < symbol->binding) {
      best = symbol;
    } else if (best->begin == symbol->begin) {
      const uint64_t best_size = best->end - best->begin;
      if ((best_size > size && best->binding <= symbol->binding) ||
          (best_size >= size && best->binding < symbol->binding)) {
        best = symbol;
      }
    }
  }
  return best;
}

const SymbolRanges::Symbol* SymbolRanges::Part::label_below(Dwarf_Addr address) const {
  const auto after = first_after(sizeless, address);
  return after == sizeless.begin() ? nullptr : &*std::prev(after);
}

bool SymbolRanges::in_section_of(const Symbol& symbol, Dwarf_Addr address) const {
  Dwarf_Addr relative = address;
  Dwarf_Addr bias = 0;
  Elf_Scn* section = dwfl_module_address_section(module_, &relative, &bias);
  return section != nullptr && elf_ndxscn(section) == symbol.section;
}

const char* SymbolRanges::find(Dwarf_Addr address) const {
  if (const Symbol* symbol = global_.holding(address)) return symbol->name;
  // A global label at the address itself ends the search before the local symbols.
  const Dwarf_Addr global_reach = global_.reach_below(address);
  const Symbol* label = global_.label_below(address);
  if (label != nullptr && label->begin == address && label->begin >= global_reach &&
      in_section_of(*label, address)) {
    return label->name;
  }
  if (const Symbol* symbol = local_.holding(address)) return symbol->name;
  // The label starting highest (a local one after a global one at one start, as libdwfl searches
  // the local part last), if nothing below it reaches past its start.
  const Symbol* local_label = local_.label_below(address);
  if (local_label != nullptr && (label == nullptr || local_label->begin >= label->begin)) {
    label = local_label;
  }
  if (label == nullptr || label->begin < std::max(global_reach, local_.reach_below(address)) ||
      !in_section_of(*label, address)) {
    return nullptr;
  }
  return label->name;
}

}  // namespace vramshim::analyzer
