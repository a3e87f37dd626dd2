// Writes the report model back as a FORMAT.md document (used by `merge`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/report.h"

namespace vramshim::analyzer {

nlohmann::json report_to_json(const Report& report);

// Writes to a temporary file next to `path`, then renames it over `path`; throws
// std::runtime_error.
void write_report_atomically(const Report& report, const std::string& path);

}  // namespace vramshim::analyzer
