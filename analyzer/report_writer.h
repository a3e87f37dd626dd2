// Writes the report model back as a FORMAT.md document (used by `merge`).
#pragma once

#include <ostream>

#include "analyzer/report.h"

namespace vramshim::analyzer {

// Streams the report as one JSON document (element by element: a merged report can be large).
void write_report(std::ostream& out, const Report& report);

}  // namespace vramshim::analyzer
