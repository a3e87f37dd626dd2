#include "shim/pool/pool_stats.h"

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

}  // namespace vramshim::pool
