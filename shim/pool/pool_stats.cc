#include "shim/pool/pool_stats.h"

#include <algorithm>

namespace vramshim::pool {
namespace {

void add(uint64_t& into, uint64_t from, support::FigureMerge merge) {
  support::merge_figure(into, from, merge);
}

// The device's own figure: every pool of the device has the same one.
void add(std::optional<uint64_t>& into, const std::optional<uint64_t>& from, support::FigureMerge) {
  if (from) into = from;
}

}  // namespace

PoolStats& PoolStats::operator+=(const PoolStats& other) {
#define VRAMSHIM_DEVICE_FIGURE(name, type, merge, ...) \
  add(name, other.name, support::FigureMerge::merge);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  return *this;
}

PoolStats& PoolStats::add_earlier(const PoolStats& earlier) {
  const uint64_t peak_in_use = std::max(peak_in_use_bytes, earlier.peak_in_use_bytes);
  const uint64_t peak_reserved = std::max(peak_reserved_bytes, earlier.peak_reserved_bytes);
  *this += earlier;
  peak_in_use_bytes = peak_in_use;
  peak_reserved_bytes = peak_reserved;
  return *this;
}

}  // namespace vramshim::pool
