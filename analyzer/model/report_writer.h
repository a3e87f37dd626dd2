// Writes the report model as a FORMAT.md document: a merged report (vramshim merge) or an imported
// one (vramshim import).
#pragma once

#include <ostream>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Streams the report as one JSON document (element by element: a merged report can be large),
// with its segments, history and trace where it has them, and each merged process's segments and
// trace.
void write_report(std::ostream& out, const Report& report);

}  // namespace vramshim::analyzer
