#include "shim/oom/nvml_processes.h"

#include <dlfcn.h>

#include "shim/intercept/real_dlsym.h"
#include "shim/oom/cuda_bus_id.h"
#include "shim/oom/nvml_abi.h"

namespace vramshim::oom {
namespace {

constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";
// Processes may start between the call that counts them and the one that lists them.
constexpr unsigned int kRoomForNewcomers = 8;
constexpr int kListAttempts = 4;
// More than any GPU runs; a count above it is not believed.
constexpr unsigned int kMaxProcesses = 4096;

struct NvmlFunctions {
  nvml::InitV2Fn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;  // optional
  nvml::DeviceGetHandleByPciBusIdV2Fn handle_by_bus_id = nullptr;
  nvml::DeviceGetComputeRunningProcessesV3Fn compute_processes = nullptr;

  std::string describe(nvml::Return result) const {
    const char* text = error_string != nullptr ? error_string(result) : nullptr;
    return std::string(text != nullptr ? text : "error") + " (" + std::to_string(result) + ")";
  }
};

// NVML's entry points, or a problem.
std::optional<NvmlFunctions> load_nvml(intercept::DlsymFn find, std::string* problem) {
  void* library = ::dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    *problem = std::string("no NVML: ") + (why != nullptr ? why : kNvmlLibrary);
    return std::nullopt;
  }
  NvmlFunctions functions;
  functions.init = reinterpret_cast<nvml::InitV2Fn>(find(library, "nvmlInit_v2"));
  functions.shutdown = reinterpret_cast<nvml::ShutdownFn>(find(library, "nvmlShutdown"));
  functions.error_string = reinterpret_cast<nvml::ErrorStringFn>(find(library, "nvmlErrorString"));
  functions.handle_by_bus_id = reinterpret_cast<nvml::DeviceGetHandleByPciBusIdV2Fn>(
      find(library, "nvmlDeviceGetHandleByPciBusId_v2"));
  functions.compute_processes = reinterpret_cast<nvml::DeviceGetComputeRunningProcessesV3Fn>(
      find(library, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (functions.init == nullptr || functions.shutdown == nullptr ||
      functions.handle_by_bus_id == nullptr || functions.compute_processes == nullptr) {
    *problem = std::string(kNvmlLibrary) +
               " lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByPciBusId_v2 or "
               "nvmlDeviceGetComputeRunningProcesses_v3 (a driver older than R510?)";
    return std::nullopt;
  }
  return functions;
}

// The listing of an initialized NVML.
NvmlListing list_processes(const NvmlFunctions& nvml_api, const std::string& pci_bus_id) {
  NvmlListing listing;
  nvml::Device device = nullptr;
  nvml::Return result = nvml_api.handle_by_bus_id(pci_bus_id.c_str(), &device);
  if (result != nvml::kSuccess) {
    listing.problem =
        "NVML has no device at PCI bus id " + pci_bus_id + ": " + nvml_api.describe(result);
    return listing;
  }
  // Asked with no room first, NVML says how many there are (infos may then be null).
  std::vector<nvml::ProcessInfo> infos;
  unsigned int count = 0;
  result = nvml_api.compute_processes(device, &count, nullptr);
  for (int attempt = 0; result == nvml::kErrorInsufficientSize && attempt < kListAttempts;
       ++attempt) {
    if (count > kMaxProcesses) {
      listing.problem = "NVML counts " + std::to_string(count) + " processes; not believed";
      return listing;
    }
    count += kRoomForNewcomers;
    const size_t bytes = size_t{count} * nvml::kWidestProcessInfoBytes;
    infos.assign((bytes + sizeof(nvml::ProcessInfo) - 1) / sizeof(nvml::ProcessInfo), {});
    result = nvml_api.compute_processes(device, &count, infos.data());
  }
  if (result != nvml::kSuccess) {
    listing.problem =
        "nvmlDeviceGetComputeRunningProcesses_v3 failed: " + nvml_api.describe(result);
    return listing;
  }
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    NvmlProcess process;
    process.pid = static_cast<pid_t>(infos[i].pid);
    if (infos[i].usedGpuMemory != nvml::kValueNotAvailable) {
      process.used_bytes = infos[i].usedGpuMemory;
    }
    listing.processes.push_back(process);
  }
  return listing;
}

}  // namespace

NvmlListing list_nvml_processes(int device, const std::string& pci_bus_id) {
  NvmlListing listing;
  // The shim never calls the public dlsym: it is the shim's own hook.
  const intercept::DlsymFn find = intercept::real_dlsym();
  if (find == nullptr) {
    listing.problem = "NVML not asked: glibc's dlsym cannot be found";
    return listing;
  }
  const std::string bus_id =
      pci_bus_id.empty() ? cuda_pci_bus_id(device, &listing.problem) : pci_bus_id;
  if (bus_id.empty()) return listing;
  const std::optional<NvmlFunctions> nvml_api = load_nvml(find, &listing.problem);
  if (!nvml_api) return listing;
  const nvml::Return result = nvml_api->init();
  if (result != nvml::kSuccess) {
    listing.problem = "nvmlInit_v2 failed: " + nvml_api->describe(result);
    return listing;
  }
  listing = list_processes(*nvml_api, bus_id);
  nvml_api->shutdown();
  return listing;
}

}  // namespace vramshim::oom
