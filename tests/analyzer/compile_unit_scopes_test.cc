// CompileUnitScopes against libdw itself: for every address of the fixtures' units, the functions
// it gives are those dwarf_getscopes and dwarf_getscopes_die give, with their call sites.
#include "analyzer/model/compile_unit_scopes.h"

#include <dwarf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace vramshim::analyzer {
namespace {

// "name (DIE offset) called at FILE-INDEX:LINE" for each function, innermost first.
std::string describe(std::vector<Dwarf_Die> functions) {
  std::string text;
  for (Dwarf_Die& function : functions) {
    const char* name = dwarf_diename(&function);
    text += std::string(name != nullptr ? name : "?") + " (" +
            std::to_string(dwarf_dieoffset(&function)) + ")";
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    if (dwarf_formudata(dwarf_attr(&function, DW_AT_call_file, &attr), &file) == 0 &&
        dwarf_formudata(dwarf_attr(&function, DW_AT_call_line, &attr), &line) == 0) {
      text += " called at " + std::to_string(file) + ":" + std::to_string(line);
    }
    text += '\n';
  }
  return text;
}

struct Comparison {
  size_t addresses = 0;
  size_t deepest = 0;  // the most functions at one address
  std::string first_difference;
};

// Compares CompileUnitScopes with libdw at every address of every unit of `path` (for a skeleton
// unit, of its split unit), for the same DIEs.
Comparison compare_with_libdw(const std::string& path) {
  Comparison comparison;
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  EXPECT_NE(dwarf, nullptr) << path << ": " << dwarf_errmsg(-1);
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die unit_die, split_die;
  while (dwarf != nullptr &&
         dwarf_get_units(dwarf, cu, &cu, &version, &unit_type, &unit_die, &split_die) == 0) {
    const bool split = unit_type == DW_UT_skeleton && split_die.cu != nullptr;
    const Dwarf_Die code = split ? split_die : unit_die;
    const CompileUnitScopes scopes(code);
    Dwarf_Addr base = 0, begin = 0, end = 0;
    for (ptrdiff_t next = dwarf_ranges(&unit_die, 0, &base, &begin, &end); next > 0;
         next = dwarf_ranges(&unit_die, next, &base, &begin, &end)) {
      for (Dwarf_Addr pc = begin; pc < end; ++pc) {
        const std::vector<Dwarf_Die> indexed = scopes.functions_at(pc);
        const std::vector<Dwarf_Die> walked = CompileUnitScopes::functions_by_libdw(code, pc);
        bool same = indexed.size() == walked.size();
        for (size_t i = 0; same && i < walked.size(); ++i) same = indexed[i].addr == walked[i].addr;
        if (!same && comparison.first_difference.empty()) {
          comparison.first_difference = path + " at " + std::to_string(pc) + ":\n" +
                                        describe(indexed) + "libdw:\n" + describe(walked);
        }
        ++comparison.addresses;
        comparison.deepest = std::max(comparison.deepest, walked.size());
      }
    }
  }
  if (dwarf != nullptr) dwarf_end(dwarf);
  if (fd >= 0) ::close(fd);
  return comparison;
}

// Three inlined subroutines deep in a subprogram, several times over.
TEST(CompileUnitScopes, GivesTheFunctionsLibdwGivesAtEveryAddressOfNestedInlining) {
  const Comparison comparison = compare_with_libdw("tests/analyzer/nested_inlining_fixture_bin");
  EXPECT_EQ(comparison.first_difference, "");
  EXPECT_GT(comparison.addresses, 100u);
  EXPECT_GE(comparison.deepest, 4u);  // innermost, middle, Layer::run (or its lambda), outer
}

// Inlined functions without a linkage name; and the same in a split unit (-gsplit-dwarf).
TEST(CompileUnitScopes, GivesTheFunctionsLibdwGivesAtEveryAddressOfInlinedFunctions) {
  for (const char* path :
       {"tests/analyzer/inline_names_fixture_bin", "tests/analyzer/inline_names_split_bin"}) {
    const Comparison comparison = compare_with_libdw(path);
    EXPECT_EQ(comparison.first_difference, "");
    EXPECT_GT(comparison.addresses, 100u) << path;
    EXPECT_GE(comparison.deepest, 2u) << path;
  }
}

}  // namespace
}  // namespace vramshim::analyzer
