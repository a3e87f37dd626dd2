// The figures of one pool, or of one device summed over its pools
// (shim/support/device_figures.def).
#pragma once

#include <cstdint>

#include "shim/support/figures.h"

namespace vramshim::pool {

// Figures of one pool, or the sum over the pools of one device: the figures of
// shim/support/device_figures.def (the report's and the `stats` command's "devices" fields), as
// uint64_t, and std::optional for an optional one (limit_bytes).
struct PoolStats {
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, unit, presence, ...) \
  support::FigureValue<uint64_t, support::FigurePresence::presence> name{};
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE

  // Adds another pool's figures by each figure's merge rule (peaks add up: an upper bound of the
  // peak of both, which the registry replaces by the device's own); an optional figure (the limit)
  // is the device's, the same in every pool.
  PoolStats& operator+=(const PoolStats& other);
};

}  // namespace vramshim::pool
