// The PCI bus id of a CUDA device of this process: what names a GPU the same in every process of
// the node, whatever CUDA_VISIBLE_DEVICES makes of its ordinal.
#pragma once

#include <string>

namespace vramshim::oom {

// The PCI bus id ("0000:18:00.0") of CUDA device `device` of the driver already loaded, or empty,
// with *problem saying why. Never loads the driver, and needs no context. A device's bus id is
// asked of the driver once and remembered: `stats` answers carry it every second.
std::string cuda_pci_bus_id(int device, std::string* problem);

}  // namespace vramshim::oom
