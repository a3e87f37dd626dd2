// Merges the reports of many processes (the ranks of a distributed job) into one merged report
// (FORMAT.md, "Merged reports").
#pragma once

#include <vector>

#include "analyzer/report.h"
#include "analyzer/symbolizer.h"

namespace vramshim::analyzer {

// Modules are re-interned by path and build-id, frames by symbolized identity (function and
// file:line, so the same code matches in every process), stacks by their merged frames; sites with
// the same stack and kind are summed and keep each process's figures in `ranks`. Merged inputs are
// flattened.
Report merge_reports(const std::vector<Report>& inputs, Symbolizer& symbolizer);

}  // namespace vramshim::analyzer
