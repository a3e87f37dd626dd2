// Parses report text into a JSON document of the members the reader reads (others are skipped as
// they are parsed), except the "stacks" list (the bulk of a large report: millions of frame ids),
// which goes straight into the model to save the time and memory of a DOM for it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

struct ParsedReport {
  nlohmann::json document;                   // what the reader reads but the top-level "stacks"
  std::optional<std::vector<Stack>> stacks;  // absent when the document has no "stacks" member
};

// Throws std::runtime_error("SOURCE: …") for text that is not JSON, is truncated, or whose stacks
// are malformed. Frame ids are not range-checked here (frames may follow stacks in the document).
ParsedReport parse_report_text(const std::string& text, const std::string& source);

}  // namespace vramshim::analyzer
