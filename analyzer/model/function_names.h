// The qualified names of a module's functions from their DWARF. A function with a linkage name is
// named by it, demangled. GCC writes none for functions of internal linkage (in an anonymous
// namespace, a lambda's operator()), whose DW_AT_name alone ("make_buffer", "operator()") would
// merge different functions in the call tree and the folded stacks: their name is built from the
// scopes that declare them instead.
#pragma once

#include <elfutils/libdw.h>

#include <string>
#include <unordered_map>

namespace vramshim::analyzer {

class FunctionNames {
 public:
  // The name of a subprogram or inlined subroutine DIE: "optimizer::(anonymous namespace)::f",
  // "run()::{lambda at train.cc:12}::operator()"; a C function at file scope keeps its plain name.
  // Sets *from_linkage_name when the name is a demangled linkage name (with its parameters).
  std::string name_of(Dwarf_Die* function, bool* from_linkage_name);

 private:
  // The name of a function without a linkage name, from the scopes it is declared in; `depth`
  // counts the enclosing functions named so far.
  std::string built_name(Dwarf_Die* function, int depth);
  // How `scope` prefixes the name of `function` declared in it; "" for a scope that is not part of
  // a name (a lexical block, the unit).
  std::string scope_name(Dwarf_Die* scope, const std::string& function, int depth);

  // By the declaring DIE's address in the loaded debug data, which tells apart DIEs of the
  // binary, its .dwo and its dwz files (their offsets overlap); dwarf_getscopes_die, which
  // finds a DIE's scopes, walks the whole unit.
  std::unordered_map<const void*, std::string> built_;
};

}  // namespace vramshim::analyzer
