// Writes a merged report (the report model with "merged_from") as a FORMAT.md document.
#pragma once

#include <ostream>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Streams the report as one JSON document (element by element: a merged report can be large).
void write_merged_report(std::ostream& out, const Report& report);

}  // namespace vramshim::analyzer
