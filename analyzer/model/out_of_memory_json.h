// An out-of-memory section as the "oom" object of FORMAT.md, for merged reports and for the
// `report --format json` view.
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Every member FORMAT.md lists, with the section's stack ids as they are.
nlohmann::json out_of_memory_json(const OutOfMemory& oom);

}  // namespace vramshim::analyzer
