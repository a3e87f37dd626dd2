// Byte counts for people: "512 B", "3.0 MiB", "1.50 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace vramshim::cli {

// Binary units (1 KiB = 1024 B), three significant digits.
std::string human_size(std::uint64_t bytes);

}  // namespace vramshim::cli
