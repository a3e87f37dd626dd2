// Byte counts for people, in powers of 1024: "512 B", "4.0 KiB", "1.5 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace vramshim::oom {

std::string human_bytes(uint64_t bytes);

}  // namespace vramshim::oom
