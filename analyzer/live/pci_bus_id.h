// A device's PCI bus id, as a process's `stats` answer gives it (the driver's form,
// "0000:18:00.0"), in NVML's form, "00000000:18:00.0": the form nvidia-smi shows and DCGM's
// exporter puts in its pci_bus_id label, so that vramshim's series join DCGM's on it. Unlike the
// CUDA ordinal, it names the same GPU in every process, whatever CUDA_VISIBLE_DEVICES makes of the
// ordinal.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace vramshim::live {

// entry["pci_bus_id"] as DOMAIN:BUS:DEVICE.FUNCTION in hexadecimal (at most 8, 2, 2 and 1 digits),
// written "%08X:%02X:%02X.%X"; nullopt when absent, null (the driver gave none) or not of that form
// (a process's answer, whose text goes into labels only once checked).
std::optional<std::string> nvml_pci_bus_id(const nlohmann::json& entry);

}  // namespace vramshim::live
