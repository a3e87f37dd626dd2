#include "shim/oom/cuda_bus_id.h"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>

#include "shim/intercept/real_dlsym.h"
#include "shim/oom/nvml_abi.h"

namespace vramshim::oom {
namespace {

// Devices past these are asked every time.
constexpr int kRememberedDevices = 64;

// Trivially destructible, so a control thread answering during exit never meets a destroyed one.
std::mutex remembered_mutex;
char remembered[kRememberedDevices][nvml::kPciBusIdBufferSize];

std::string ask_driver(int device, std::string* problem) {
  // The shim never calls the public dlsym: it is the shim's own hook.
  const intercept::DlsymFn find = intercept::real_dlsym();
  void* driver = find != nullptr ? ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (driver == nullptr) {
    *problem = "libcuda.so.1 is not loaded, so the device's PCI bus id is unknown";
    return {};
  }
  const auto get_device = reinterpret_cast<decltype(&cuDeviceGet)>(find(driver, "cuDeviceGet"));
  const auto get_bus_id =
      reinterpret_cast<decltype(&cuDeviceGetPCIBusId)>(find(driver, "cuDeviceGetPCIBusId"));
  char bus_id[nvml::kPciBusIdBufferSize] = {};
  CUdevice handle = 0;
  CUresult result = CUDA_ERROR_NOT_FOUND;
  if (get_device != nullptr && get_bus_id != nullptr) {
    result = get_device(&handle, device);
    if (result == CUDA_SUCCESS) result = get_bus_id(bus_id, sizeof(bus_id), handle);
  }
  ::dlclose(driver);  // only the reference RTLD_NOLOAD added
  if (result != CUDA_SUCCESS) {
    *problem = "the driver gave no PCI bus id for CUDA device " + std::to_string(device) +
               " (CUresult " + std::to_string(result) + ")";
    return {};
  }
  bus_id[sizeof(bus_id) - 1] = '\0';
  return bus_id;
}

}  // namespace

std::string cuda_pci_bus_id(int device, std::string* problem) {
  const bool rememberable = device >= 0 && device < kRememberedDevices;
  if (rememberable) {
    std::lock_guard<std::mutex> lock(remembered_mutex);
    if (remembered[device][0] != '\0') return remembered[device];
  }
  std::string bus_id = ask_driver(device, problem);
  if (rememberable && !bus_id.empty() && bus_id.size() < nvml::kPciBusIdBufferSize) {
    std::lock_guard<std::mutex> lock(remembered_mutex);
    bus_id.copy(remembered[device], bus_id.size());
  }
  return bus_id;
}

}  // namespace vramshim::oom
