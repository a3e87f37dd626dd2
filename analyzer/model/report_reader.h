// Reads and validates a report file (shim/report/FORMAT.md, and the merged form this analyzer
// writes).
#pragma once

#include <string>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// The newest report version this reader understands.
inline constexpr int64_t kReportVersion = 3;

// Throws std::runtime_error with a one-line message naming the file and the problem when the file
// is missing, empty, truncated, not JSON, hostile (too deep, too large), of another format or a
// newer version, lacks a required field, or refers to modules, frames or stacks that do not exist.
Report read_report(const std::string& path);

}  // namespace vramshim::analyzer
