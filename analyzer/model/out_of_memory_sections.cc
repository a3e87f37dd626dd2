#include "analyzer/model/out_of_memory_sections.h"

namespace vramshim::analyzer {

std::vector<OutOfMemorySection> out_of_memory_sections(const Report& report) {
  std::vector<OutOfMemorySection> sections;
  if (report.oom) sections.push_back({&report.process, &*report.oom});
  for (const ProcessInfo& process : report.merged_from) {
    if (process.oom) sections.push_back({&process, &*process.oom});
  }
  return sections;
}

}  // namespace vramshim::analyzer
