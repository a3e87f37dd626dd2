// The compute processes on one GPU as the NVIDIA management library lists them, every user's.
// libnvidia-ml.so.1 is opened only when asked, never at start, and is never needed: without it the
// listing says why.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vramshim::oom {

struct NvmlProcess {
  pid_t pid = 0;                            // as the driver knows it: a pid of the host's namespace
  std::optional<std::uint64_t> used_bytes;  // nullopt where NVML may not say
};

struct NvmlListing {
  std::vector<NvmlProcess> processes;
  std::string problem;  // why NVML gave no list; empty when it did
};

// Lists the compute processes on the device whose PCI bus id is `pci_bus_id`, or, when it is empty,
// on CUDA device `device` of the driver this process has loaded (cuDeviceGetPCIBusId). Opens
// libnvidia-ml.so.1 (RTLD_LOCAL; it stays loaded: NVML may leave threads that unloading would
// break), then nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2,
// nvmlDeviceGetComputeRunningProcesses_v3 (again with more room while NVML says
// NVML_ERROR_INSUFFICIENT_SIZE), nvmlShutdown. Waits as long as NVML does: call it on a
// DetachedHelper.
NvmlListing list_nvml_processes(int device, const std::string& pci_bus_id);

}  // namespace vramshim::oom
