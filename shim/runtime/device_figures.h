// One device's pool figures as (name, value) pairs, in the order of the report's and the `stats`
// command's "devices" objects (shim/report/FORMAT.md). Null values: no limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shim/pool/pool_stats.h"

namespace vramshim::runtime {

using DeviceFigureList = std::vector<std::pair<std::string, std::optional<uint64_t>>>;

DeviceFigureList device_figure_list(const pool::PoolStats& stats);

}  // namespace vramshim::runtime
