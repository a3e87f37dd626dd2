// The function a frame without DWARF names lies in, found by SymbolRanges' binary searches, is the
// one libdwfl's dwfl_module_addrname finds by walking the symbol table: at every symbol's edges and
// at random addresses of the code of the C and C++ runtime libraries and a test binary with local,
// weak and sizeless symbols.
#include "analyzer/model/symbol_ranges.h"

#include <gelf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

namespace vramshim::analyzer {
namespace {

const Dwfl_Callbacks kOffline = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo,
                                 dwfl_offline_section_address, nullptr};

// Whether `address` lies in code (an executable section): where frames are.
bool in_code(Dwfl_Module* module, Dwarf_Addr address) {
  Dwarf_Addr relative = address;
  Dwarf_Addr bias = 0;
  Elf_Scn* section = dwfl_module_address_section(module, &relative, &bias);
  GElf_Shdr header;
  return section != nullptr && gelf_getshdr(section, &header) != nullptr &&
         (header.sh_flags & SHF_EXECINSTR) != 0;
}

std::string shown(const char* name) { return name != nullptr ? name : "(none)"; }

TEST(SymbolRanges, FindsTheSymbolLibdwflFindsForEveryAddressOfCode) {
  for (const char* path :
       {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "tests/analyzer/fixture_report_bin", "tests/analyzer/libsymbol_cases.so"}) {
    Dwfl* dwfl = dwfl_begin(&kOffline);
    ASSERT_NE(dwfl, nullptr);
    Dwfl_Module* module = dwfl_report_offline(dwfl, path, path, -1);
    ASSERT_NE(module, nullptr) << path;
    dwfl_report_end(dwfl, nullptr, nullptr);
    const SymbolRanges symbols(module);
    size_t compared = 0;
    auto compare = [&](Dwarf_Addr address) {
      if (!in_code(module, address)) return;
      ++compared;
      EXPECT_EQ(shown(symbols.find(address)), shown(dwfl_module_addrname(module, address)))
          << path << " at " << std::hex << address;
    };
    // Each symbol's first and last byte, the byte past it and the one before it.
    const int count = dwfl_module_getsymtab(module);
    for (int i = 1; i < count; ++i) {
      GElf_Sym symbol;
      GElf_Addr address = 0;
      if (dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr) ==
          nullptr) {
        continue;
      }
      for (Dwarf_Addr probe :
           {address, address + symbol.st_size - 1, address + symbol.st_size, address - 1}) {
        compare(probe);
      }
    }
    Dwarf_Addr low = 0;
    Dwarf_Addr high = 0;
    dwfl_module_info(module, nullptr, &low, &high, nullptr, nullptr, nullptr, nullptr);
    std::mt19937_64 random(5);
    for (int i = 0; i < 20000; ++i) compare(low + random() % (high - low));
    EXPECT_GT(compared, 1000u) << path;
    dwfl_end(dwfl);
  }
}

}  // namespace
}  // namespace vramshim::analyzer
