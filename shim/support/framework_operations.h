// The lookup of a frame's function in framework_operations.def, for the shim's out-of-memory
// labels and the analyzer's views alike. No allocation, no lock.
#pragma once

#include <fnmatch.h>

#include <cstddef>

#include "shim/support/function_name.h"

namespace vramshim::support {

inline constexpr int kNotAnOperation = -1;

// The place in framework_operations.def of the first pattern that `function` (demangled) matches
// (0 is the most telling), or kNotAnOperation.
inline int framework_operation_rank(const char* function) {
  static constexpr const char* kPatterns[] = {
#define VRAMSHIM_FRAMEWORK_OPERATION(pattern) pattern,
#include "shim/support/framework_operations.def"
#undef VRAMSHIM_FRAMEWORK_OPERATION
  };
  const char* name = without_return_type(function);
  for (int rank = 0; rank < static_cast<int>(sizeof(kPatterns) / sizeof(kPatterns[0])); ++rank) {
    if (fnmatch(kPatterns[rank], name, 0) == 0) return rank;
  }
  return kNotAnOperation;
}

// Whether an operation of rank `rank` says more than the best found so far (`best`).
inline bool tells_more(int rank, int best) {
  return rank != kNotAnOperation && (best == kNotAnOperation || rank < best);
}

// Which of a stack's `count` frames (innermost first) says what the framework was doing: the
// innermost frame of the most telling kind that any frame is; `count` for none. `function_of(i)`
// gives frame i's demangled function as a std::string, empty when unknown.
template <typename FunctionOf>
size_t operation_frame(size_t count, FunctionOf&& function_of) {
  size_t found = count;
  int best = kNotAnOperation;
  for (size_t i = 0; i < count; ++i) {
    const auto& function = function_of(i);
    const int rank = framework_operation_rank(function.c_str());
    if (tells_more(rank, best)) {
      best = rank;
      found = i;
    }
  }
  return found;
}

}  // namespace vramshim::support
