// The functions of one compile unit that hold an address: the inlined subroutines, innermost
// first, then the subprogram they are inlined into. libdw's dwarf_getscopes and, for each inlined
// frame, dwarf_getscopes_die walk the unit's whole DIE tree for each address (6.5 ms a frame in
// the analyzer's largest units); this walks it once and answers each address by binary searches,
// as those two would.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

namespace vramshim::analyzer {

class CompileUnitScopes {
 public:
  // Walks `unit` (the unit holding the code: a split unit rather than its skeleton) as libdw does.
  explicit CompileUnitScopes(Dwarf_Die unit);

  // The subprogram and inlined subroutine DIEs holding `pc` (a DWARF address of the unit),
  // innermost first, as libdw 0.188 gives them: the first of those dwarf_getscopes gives, then,
  // after each inlined one, the next of those dwarf_getscopes_die gives for it. Empty when libdw
  // gives none (nothing holds `pc`; an inlined subroutine whose abstract origin is outside the
  // unit, as after LTO). Where the walk met DWARF libdw could not read, libdw answers.
  std::vector<Dwarf_Die> functions_at(Dwarf_Addr pc) const;

  // The same list asked of libdw itself, walking the unit for each address (what functions_at
  // falls back to where the walk met DWARF it could not read, and what its test compares with).
  static std::vector<Dwarf_Die> functions_by_libdw(Dwarf_Die unit, Dwarf_Addr pc);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  // A DIE the walk visited that holds addresses or other DIEs worth walking.
  struct Node {
    Dwarf_Die die;
    uint32_t parent = kNone;  // in nodes_; kNone for the unit
    int tag = 0;
    // Its children's address ranges: ranges_[first_range, end_range).
    uint32_t first_range = 0;
    uint32_t end_range = 0;
    // Its first child (a node index) whose ranges libdw could not read; kNone if none.
    uint32_t first_unreadable_child = kNone;
  };
  // One address range of a child node, among its siblings' ranges by begin.
  struct Range {
    Dwarf_Addr begin = 0;
    Dwarf_Addr end = 0;    // past the last address
    Dwarf_Addr reach = 0;  // the largest end of this range and all its siblings' that sort before
    uint32_t child = 0;    // the node; siblings' nodes are in the walk's order
  };
  struct Import;  // an imported unit being walked, for libdw's check against import cycles
  struct Walk;    // what the walk collects before it is sorted

  // Visits the children of node `parent` from `child` on, as libdw's walk_children does: the
  // children of an imported (partial) unit in place of the DIE that imports it. False on an error
  // that would stop libdw's walk.
  bool walk_children(Walk& walk, uint32_t parent, Dwarf_Die child, const Import* imports);
  bool visit(Walk& walk, uint32_t parent, Dwarf_Die& child, const Import* imports);
  // The first child of `parent`, in the walk's order, whose ranges hold `pc`; kNone if none.
  // Sets *unreadable when libdw would meet a child whose ranges it cannot read first.
  uint32_t child_holding(const Node& parent, Dwarf_Addr pc, bool* unreadable) const;
  // The node where dwarf_getscopes_die finds `die` (its first visit); kNone if none.
  uint32_t first_visit_of(const Dwarf_Die& die) const;
  bool visited_subprogram(const void* addr) const;

  Dwarf_Die unit_;
  bool readable_ = true;     // whether the walk read the whole unit
  std::vector<Node> nodes_;  // in the walk's order; the unit first
  std::vector<Range> ranges_;
  // (DIE address, node) of the inlined subroutines, by address then walk order.
  std::vector<std::pair<const void*, uint32_t>> inlined_;
  // The addresses of the subprogram DIEs the walk visited, sorted: dwarf_getscopes finds an
  // inlined subroutine's abstract origin among them.
  std::vector<const void*> subprograms_;
};

}  // namespace vramshim::analyzer
