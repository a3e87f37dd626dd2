// How long a frame's function or file name may be where the analyzer keeps or shows it. Views print
// a frame once for every stack that holds it, and an import keeps one copy per frame: a name made
// absurdly long (a report of 1 MB naming one function of 1 MiB in a stack of 4,096 frames printed
// 4 GB) is cut. Real names stay far below (the longest C++ templates run to a few KiB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vramshim::analyzer {

inline constexpr size_t kMaxShownNameBytes = 4096;

// `name` if it is at most kMaxShownNameBytes long, else cut at a UTF-8 character boundary, with
// "…#" and 8 hex digits of a hash of the whole name added, to at most kMaxShownNameBytes.
std::string shown_name(std::string_view name);

// How many names shown_name has cut so far, in the process (each cut reads the whole name): for
// the tests of callers that must cut a name they share once.
uint64_t shown_name_cuts();

}  // namespace vramshim::analyzer
