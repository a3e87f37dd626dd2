// The out-of-memory sections of a report, each with the process that failed: a report's own, or
// those of the processes a merged report holds.
#pragma once

#include <vector>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

struct OutOfMemorySection {
  const ProcessInfo* process;
  const OutOfMemory* oom;  // its stack ids are the report's
};

// In merged_from order for a merged report; empty when no process ran out of memory.
std::vector<OutOfMemorySection> out_of_memory_sections(const Report& report);

}  // namespace vramshim::analyzer
