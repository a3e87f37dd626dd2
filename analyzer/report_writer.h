// Writes the report model back as a FORMAT.md document (used by `merge`).
#pragma once

#include <ostream>
#include <string>

#include "analyzer/report.h"

namespace vramshim::analyzer {

// Streams the report as one JSON document (element by element: a merged report can be large).
void write_report(std::ostream& out, const Report& report);

// Writes to a temporary file next to `path`, then renames it over `path`; throws
// std::runtime_error.
void write_report_atomically(const Report& report, const std::string& path);

}  // namespace vramshim::analyzer
