// Helpers shared by the report tests: a fresh directory and a parsed JSON file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace vramshim::report {

// A new empty directory under $TEST_TMPDIR (or /tmp).
std::string make_test_directory();

// The parsed document; a parse error fails the calling test through an exception.
nlohmann::json read_json(const std::string& path);

// Names in `directory` (not . or ..).
std::vector<std::string> list_directory(const std::string& directory);

}  // namespace vramshim::report
