// One device's pool figures as (name, value) pairs: the figures of shim/support/device_figures.def,
// in its order, which is that of the report's and the `stats` command's "devices" objects
// (shim/report/FORMAT.md). Null values: an absent optional figure (no limit).
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
