#include "analyzer/model/compile_unit_scopes.h"

#include <dwarf.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace vramshim::analyzer {
namespace {

bool is_function(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine; }

// The DIEs whose children libdw's walk visits (may_have_scopes in libdw_visit_scopes.c).
bool may_have_scopes(int tag) {
  switch (tag) {
    case DW_TAG_compile_unit:
    case DW_TAG_module:
    case DW_TAG_lexical_block:
    case DW_TAG_with_stmt:
    case DW_TAG_catch_block:
    case DW_TAG_try_block:
    case DW_TAG_entry_point:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
      return true;
    default:
      return false;
  }
}

// Whether dwarf_ranges can give `die` a range: without these attributes it gives none (or fails
// for want of a ranges section, which dwarf_getscopes takes for none).
bool has_address_attributes(Dwarf_Die* die) {
  return dwarf_hasattr(die, DW_AT_ranges) != 0 ||
         (dwarf_hasattr(die, DW_AT_low_pc) != 0 && dwarf_hasattr(die, DW_AT_high_pc) != 0);
}

}  // namespace

struct CompileUnitScopes::Import {
  const void* die = nullptr;  // the DW_TAG_imported_unit
  const Import* outer = nullptr;
};

struct CompileUnitScopes::Walk {
  std::vector<std::pair<uint32_t, Range>> ranges;  // (parent node, range of a child)
};

CompileUnitScopes::CompileUnitScopes(Dwarf_Die unit) : unit_(unit) {
  nodes_.push_back({unit, kNone, dwarf_tag(&unit)});
  Walk walk;
  Dwarf_Die child;
  const int has_child = dwarf_child(&unit, &child);
  readable_ = has_child > 0 || (has_child == 0 && walk_children(walk, 0, child, nullptr));
  if (!readable_) {  // libdw answers every address: nothing kept
    nodes_ = {};
    inlined_ = {};
    subprograms_ = {};
    return;
  }
  std::sort(walk.ranges.begin(), walk.ranges.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.begin, a.second.child) <
           std::tie(b.first, b.second.begin, b.second.child);
  });
  ranges_.reserve(walk.ranges.size());
  for (size_t i = 0; i < walk.ranges.size(); ++i) {
    Node& parent = nodes_[walk.ranges[i].first];
    Range range = walk.ranges[i].second;
    const bool first_of_parent = i == 0 || walk.ranges[i - 1].first != walk.ranges[i].first;
    if (first_of_parent) parent.first_range = static_cast<uint32_t>(ranges_.size());
    range.reach = first_of_parent ? range.end : std::max(ranges_.back().reach, range.end);
    ranges_.push_back(range);
    parent.end_range = static_cast<uint32_t>(ranges_.size());
  }
  std::sort(inlined_.begin(), inlined_.end());
  std::sort(subprograms_.begin(), subprograms_.end());
  // Kept for as long as the module: no room to grow.
  nodes_.shrink_to_fit();
  inlined_.shrink_to_fit();
  subprograms_.shrink_to_fit();
}

bool CompileUnitScopes::walk_children(Walk& walk, uint32_t parent, Dwarf_Die child,
                                      const Import* imports) {
  int next = 0;
  do {
    // The children of an imported unit are walked as if they were the importing DIE's siblings.
    while (dwarf_tag(&child) == DW_TAG_imported_unit) {
      Dwarf_Die importing = child;
      Dwarf_Attribute attr;
      Dwarf_Die imported;
      // Some gcc -flto versions imported other top-level compile units; libdw skips those.
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &imported) != nullptr &&
          dwarf_tag(&imported) != DW_TAG_compile_unit && dwarf_child(&imported, &imported) == 0) {
        for (const Import* outer = imports; outer != nullptr; outer = outer->outer) {
          if (outer->die == importing.addr) return false;  // a cycle: libdw stops
        }
        const Import import{importing.addr, imports};
        if (!walk_children(walk, parent, imported, &import)) return false;
      }
      next = dwarf_siblingof(&importing, &child);
      if (next != 0) return next > 0;
    }
    if (!visit(walk, parent, child, imports)) return false;
  } while ((next = dwarf_siblingof(&child, &child)) == 0);
  return next > 0;
}

bool CompileUnitScopes::visit(Walk& walk, uint32_t parent, Dwarf_Die& child,
                              const Import* imports) {
  const int tag = dwarf_tag(&child);
  if (tag == DW_TAG_subprogram) subprograms_.push_back(child.addr);
  const bool addressed = has_address_attributes(&child);
  // libdw takes dwarf_haschildren's -1 (an error) for "has children", then fails in dwarf_child.
  const bool descends = may_have_scopes(tag) && dwarf_haschildren(&child) != 0;
  if (!addressed && !descends) return true;
  const auto node = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({child, parent, tag});
  if (tag == DW_TAG_inlined_subroutine) inlined_.emplace_back(child.addr, node);
  if (addressed) {
    Dwarf_Addr base = 0, begin = 0, end = 0;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(&child, offset, &base, &begin, &end)) > 0) {
      if (begin < end) walk.ranges.push_back({parent, {begin, end, 0, node}});
    }
    if (offset < 0 && nodes_[parent].first_unreadable_child == kNone) {
      nodes_[parent].first_unreadable_child = node;
    }
  }
  if (!descends) return true;
  Dwarf_Die grandchild;
  const int has_child = dwarf_child(&child, &grandchild);
  if (has_child != 0) return has_child > 0;
  if (!walk_children(walk, node, grandchild, imports)) return false;
  // A DIE without addresses that holds none (a class of declarations) is on no address's path.
  if (!addressed && nodes_.size() == node + 1) {
    if (tag == DW_TAG_inlined_subroutine) inlined_.pop_back();
    nodes_.pop_back();
  }
  return true;
}

uint32_t CompileUnitScopes::child_holding(const Node& parent, Dwarf_Addr pc,
                                          bool* unreadable) const {
  const auto first = ranges_.begin() + parent.first_range;
  auto after = std::upper_bound(first, ranges_.begin() + parent.end_range, pc,
                                [](Dwarf_Addr a, const Range& range) { return a < range.begin; });
  // Siblings' ranges may overlap: walk back while an earlier range can still reach `pc`; libdw
  // takes the first sibling in the unit's order that holds it.
  uint32_t holding = kNone;
  while (after != first && std::prev(after)->reach > pc) {
    --after;
    if (pc < after->end) holding = std::min(holding, after->child);
  }
  // dwarf_getscopes asks each sibling before the one that holds `pc` whether it does.
  *unreadable = parent.first_unreadable_child < holding;
  return holding;
}

uint32_t CompileUnitScopes::first_visit_of(const Dwarf_Die& die) const {
  const auto found = std::lower_bound(inlined_.begin(), inlined_.end(),
                                      std::make_pair(static_cast<const void*>(die.addr), 0u));
  return found != inlined_.end() && found->first == die.addr ? found->second : kNone;
}

bool CompileUnitScopes::visited_subprogram(const void* addr) const {
  return std::binary_search(subprograms_.begin(), subprograms_.end(), addr);
}

std::vector<Dwarf_Die> CompileUnitScopes::functions_by_libdw(Dwarf_Die unit, Dwarf_Addr pc) {
  std::vector<Dwarf_Die> functions;
  Dwarf_Die* scopes = nullptr;
  int nscopes = dwarf_getscopes(&unit, pc, &scopes);
  for (int i = 0; i < nscopes; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (!is_function(tag)) continue;
    functions.push_back(scopes[i]);
    if (tag == DW_TAG_subprogram) break;
    // dwarf_getscopes continues past an inlined instance with its abstract definition's scopes;
    // the caller is among the DIEs that physically contain the instance.
    Dwarf_Die* containing = nullptr;
    const int ncontaining = dwarf_getscopes_die(&scopes[i], &containing);
    std::free(scopes);
    scopes = containing;
    nscopes = ncontaining > 0 ? ncontaining : 0;
    i = 0;  // containing[0] is the instance itself; the loop's ++i moves past it
  }
  std::free(scopes);
  return functions;
}

std::vector<Dwarf_Die> CompileUnitScopes::functions_at(Dwarf_Addr pc) const {
  if (!readable_) return functions_by_libdw(unit_, pc);
  // dwarf_getscopes: down from the unit, into the first child holding `pc` at each level.
  uint32_t innermost = 0;
  uint32_t deepest_inlined = kNone;
  for (;;) {
    bool unreadable = false;
    const uint32_t child = child_holding(nodes_[innermost], pc, &unreadable);
    if (unreadable) return functions_by_libdw(unit_, pc);
    if (child == kNone) break;
    innermost = child;
    if (nodes_[child].tag == DW_TAG_inlined_subroutine) deepest_inlined = child;
  }
  if (innermost == 0) return {};
  if (deepest_inlined != kNone) {
    // dwarf_getscopes looks for the abstract origin of the innermost inlined subroutine in the
    // unit (libdw 0.188: in this unit only), and gives nothing where it is missing.
    Dwarf_Die instance = nodes_[deepest_inlined].die;
    Dwarf_Attribute attr;
    Dwarf_Die origin;
    if (dwarf_formref_die(dwarf_attr(&instance, DW_AT_abstract_origin, &attr), &origin) ==
        nullptr) {
      return {};
    }
    // Only the subprograms' DIEs are kept to look in; an origin of another kind is libdw's to find.
    if (dwarf_tag(&origin) != DW_TAG_subprogram) return functions_by_libdw(unit_, pc);
    if (!visited_subprogram(origin.addr)) return {};
  }
  // The caller of an inlined subroutine is among the DIEs that contain it where
  // dwarf_getscopes_die finds it: its first visit.
  std::vector<Dwarf_Die> functions;
  for (uint32_t node = innermost; node != kNone; node = nodes_[node].parent) {
    if (!is_function(nodes_[node].tag)) continue;
    Dwarf_Die die = nodes_[node].die;
    functions.push_back(die);
    if (nodes_[node].tag == DW_TAG_subprogram) break;
    // dwarf_getscopes_die walks the unit the DIE is in: an imported unit's is libdw's to walk.
    if (die.cu != unit_.cu) return functions_by_libdw(unit_, pc);
    node = first_visit_of(die);
  }
  return functions;
}

}  // namespace vramshim::analyzer
