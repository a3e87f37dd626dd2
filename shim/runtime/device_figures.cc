#include "shim/runtime/device_figures.h"

namespace vramshim::runtime {

DeviceFigureList device_figure_list(const pool::PoolStats& s) {
  DeviceFigureList list;
#define VRAMSHIM_DEVICE_FIGURE(name, ...) list.emplace_back(#name, s.name);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  return list;
}

}  // namespace vramshim::runtime
