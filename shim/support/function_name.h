// Demangled function names as the lists of system_libraries.def and framework_operations.def
// match them. No allocation, no lock.
#pragma once

namespace vramshim::support {

// The qualified name and parameters of a demangled function, past the return type that the name
// of a template's instance starts with ("void at::cuda::blas::gemm<float>(char, …)" ->
// "at::cuda::blas::gemm<float>(char, …)"): the last space outside template arguments before the
// parameter list. The name itself when it has no return type, or one it cannot tell.
inline const char* without_return_type(const char* function) {
  const char* after_space = function;
  int depth = 0;
  for (const char* c = function; *c != '\0'; ++c) {
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
