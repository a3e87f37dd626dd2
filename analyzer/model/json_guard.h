// Limits checked on a report before it is parsed, so hostile input cannot exhaust the memory (a
// huge file, a giant string) or the patience (deep nesting) of the parser.
#pragma once

#include <cstdint>
#include <string>

namespace vramshim::analyzer {

struct JsonLimits {
  uint64_t max_file_bytes = uint64_t{4} << 30;
  int max_depth = 64;
  uint64_t max_string_bytes = uint64_t{1} << 20;
};

// The whole file, checked while it is read. Throws std::runtime_error("PATH: …") when it is
// missing, unreadable, not a regular file (a FIFO or a device is refused before anything is read
// from it), empty, larger than max_file_bytes (checked before reading, and again while reading, in
// case it grows), nests deeper than max_depth or holds a string longer than max_string_bytes:
// hostile input is refused before it is all in memory. Does not validate the JSON grammar; the
// parser does that afterwards.
std::string read_checked_json(const std::string& path, const JsonLimits& limits = {});

}  // namespace vramshim::analyzer
