// Structural limits checked on a JSON file before it is parsed, so hostile input cannot exhaust the
// stack (deep nesting) or memory (a giant string) of the parser.
#pragma once

#include <cstdint>
#include <string>

namespace vramshim::analyzer {

struct JsonLimits {
  uint64_t max_file_bytes = uint64_t{4} << 30;
  int max_depth = 64;
  uint64_t max_string_bytes = uint64_t{1} << 20;
};

// Streams the file once and throws std::runtime_error("PATH: …") when it is missing, empty, larger
// than the limits allow, nests deeper than max_depth or holds a string longer than
// max_string_bytes. Returns the file size. Does not validate the JSON grammar; the parser does that
// afterwards.
uint64_t check_json_limits(const std::string& path, const JsonLimits& limits = {});

}  // namespace vramshim::analyzer
