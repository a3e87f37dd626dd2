#include "analyzer/model/function_names.h"

#include <dwarf.h>

#include <cstdlib>

#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

// Enclosing functions named in one name at most: a local class of a lambda of a function ... is
// named whole up to this depth.
constexpr int kMaxEnclosingFunctions = 8;
// References followed from a function to its declaration at most (a damaged file may loop).
constexpr int kMaxDeclarationHops = 8;

const char* attribute_string(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// The demangled linkage name of a function, found through its abstract origin and specification
// too; "" when it has none.
std::string demangled_linkage_name(Dwarf_Die* function) {
  const char* linkage = attribute_string(function, DW_AT_linkage_name);
  if (linkage == nullptr) linkage = attribute_string(function, DW_AT_MIPS_linkage_name);
  return linkage != nullptr ? demangle(linkage) : std::string();
}

// The DIE that declares `function`, whose parents are the scopes it is declared in: an inlined
// instance's abstract origin, and the declaration in its class or namespace of a function defined
// outside it (DW_AT_specification).
Dwarf_Die declaration_of(Dwarf_Die* function) {
  Dwarf_Die declaration = *function;
  for (int hop = 0; hop < kMaxDeclarationHops; ++hop) {
    Dwarf_Attribute attr;
    Dwarf_Die target;
    if ((dwarf_attr(&declaration, DW_AT_abstract_origin, &attr) == nullptr &&
         dwarf_attr(&declaration, DW_AT_specification, &attr) == nullptr) ||
        dwarf_formref_die(&attr, &target) == nullptr) {
      break;
    }
    declaration = target;
  }
  return declaration;
}

// "{lambda at FILE:LINE}" for an unnamed type (FILE: the basename of where it is declared), with
// `what` for "lambda"; "{lambda}" when its DWARF does not say where.
std::string unnamed_type(const char* what, Dwarf_Die* type) {
  const char* file = dwarf_decl_file(type);
  int line = 0;
  if (file == nullptr || dwarf_decl_line(type, &line) != 0) return std::string("{") + what + '}';
  std::string place = file;
  if (const size_t slash = place.rfind('/'); slash != std::string::npos) place.erase(0, slash + 1);
  return std::string("{") + what + " at " + place + ':' + std::to_string(line) + '}';
}

}  // namespace

std::string FunctionNames::name_of(Dwarf_Die* function, bool* from_linkage_name) {
  std::string linkage = demangled_linkage_name(function);
  *from_linkage_name = !linkage.empty();
  return *from_linkage_name ? linkage : built_name(function, 0);
}

std::string FunctionNames::built_name(Dwarf_Die* function, int depth) {
  Dwarf_Die declaration = declaration_of(function);
  if (const auto known = built_.find(declaration.addr); known != built_.end()) return known->second;
  const char* plain = dwarf_diename(&declaration);
  const std::string name = plain != nullptr ? plain : "";
  std::string qualified = name;
  Dwarf_Die* scopes = nullptr;
  const int count = dwarf_getscopes_die(&declaration, &scopes);
  // scopes[0] is the declaration itself; then its parents, outward.
  for (int i = 1; i < count && !name.empty(); ++i) {
    const std::string scope = scope_name(&scopes[i], name, depth);
    if (!scope.empty()) qualified = scope + "::" + qualified;
    // An enclosing function's name holds its own scopes.
    if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) break;
  }
  std::free(scopes);
  built_.emplace(declaration.addr, qualified);
  return qualified;
}

std::string FunctionNames::scope_name(Dwarf_Die* scope, const std::string& function, int depth) {
  const char* name = dwarf_diename(scope);
  switch (dwarf_tag(scope)) {
    case DW_TAG_namespace:
      return name != nullptr ? name : "(anonymous namespace)";  // as the demangler writes it
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
      if (name != nullptr) return name;
      // A lambda's closure type has no name and its function is always operator(): where the
      // lambda is written tells lambdas apart.
      return unnamed_type(function == "operator()" ? "lambda" : "unnamed type", scope);
    case DW_TAG_subprogram: {
      if (std::string linkage = demangled_linkage_name(scope); !linkage.empty()) return linkage;
      if (depth >= kMaxEnclosingFunctions) return name != nullptr ? name : "";
      return built_name(scope, depth + 1);
    }
    default:
      return {};
  }
}

}  // namespace vramshim::analyzer
