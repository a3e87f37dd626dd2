// Human-readable figures: byte sizes in binary units, signed growth, counts, durations.
#pragma once

#include <cstdint>
#include <string>

namespace vramshim::analyzer {

// "0 B", "512 B", "1.5 KiB", "3.0 MiB", "12.3 GiB".
std::string format_bytes(int64_t bytes);

// format_bytes with an explicit sign: "+1.0 MiB", "-512 B", "0 B".
std::string format_signed_bytes(int64_t bytes);

// Thousands separated: "1,234,567".
std::string format_count(int64_t count);

// The count and the noun for it: "1 site", "1,024 allocations".
std::string format_count_of(int64_t count, const char* one, const char* many);

// "42.8 s".
std::string format_seconds(double seconds);

}  // namespace vramshim::analyzer
