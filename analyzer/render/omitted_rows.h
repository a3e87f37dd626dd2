// The line a text view ends with when it left rows out, so that no view truncates silently.
#pragma once

#include <cstddef>
#include <string>

namespace vramshim::analyzer {

// "… 3 more sites (--top 0 for all)": `count` rows of what `one` and `many` name left out, and how
// to see them (`how`, by default the --top option every view with a limit has).
std::string omitted_rows_line(size_t count, const char* one, const char* many,
                              const char* how = "--top 0 for all");

}  // namespace vramshim::analyzer
