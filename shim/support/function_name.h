// Demangled function names as the lists of system_libraries.def and framework_operations.def
// match them. No allocation, no lock.
#pragma once

#include <cstring>

namespace vramshim::support {

// Whether `at`, inside `function`, starts the keyword `operator` of an operator's name.
inline bool starts_operator_name(const char* function, const char* at) {
  if (std::strncmp(at, "operator", 8) != 0) return false;
  if (at != function && at[-1] != ':' && at[-1] != ' ') return false;
  const char next = at[8];
  return !(next == '_' || (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
           (next >= '0' && next <= '9'));
}

// The qualified name and parameters of a demangled function, past the return type that the name
// of a template's instance starts with ("void at::cuda::blas::gemm<float>(char, …)" ->
// "at::cuda::blas::gemm<float>(char, …)"): the last space outside template arguments before the
// parameter list, or before an operator's name (whose `<`, `>` and conversion type are not the
// return type's). The name itself when it has no return type, or one it cannot tell.
inline const char* without_return_type(const char* function) {
  const char* after_space = function;
  int depth = 0;
  for (const char* c = function; *c != '\0'; ++c) {
    if (depth == 0 && starts_operator_name(function, c)) return after_space;
    if (*c == '<') {
      ++depth;
    } else if (*c == '>') {
      if (--depth < 0) return function;
    } else if (*c == '(' && depth == 0) {
      return after_space;
    } else if (*c == ' ' && depth == 0) {
      after_space = c + 1;
    }
  }
  return function;
}

}  // namespace vramshim::support
