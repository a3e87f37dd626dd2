// Exported entry points: initialization, version, error strings, entry-point lookup and device
// queries.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/fakecuda/driver.h"
#include "tests/fakecuda/entry_points.h"

using namespace vramshim::fakecuda;

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* description;
};

const ErrorText kErrors[] = {
#define FAKECUDA_ERROR(name, description) {name, #name, description},
#include "tests/fakecuda/error_codes.def"
#undef FAKECUDA_ERROR
};

const ErrorText* findError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

CUresult checkDevice(CUdevice dev) {
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  return dev >= 0 && dev < static_cast<int>(d.devices.size()) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_DEVICE;
}

uint64_t capacityOf(CUdevice dev) {
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.devices[dev].capacity;
}

// Where a device sits on the PCI bus: eight GPUs per domain on the buses of an eight-GPU HGX
// board, so that bus ids look like real ones ("0000:18:00.0") and differ per device.
struct PciLocation {
  int domain;
  int bus;
};

PciLocation pciLocationOf(CUdevice dev) {
  static constexpr int kBuses[] = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};
  constexpr int kPerDomain = sizeof(kBuses) / sizeof(kBuses[0]);
  return {dev / kPerDomain, kBuses[dev % kPerDomain]};
}

// Attributes of an H200 (compute capability 9.0); the rest read 0.
int attributeValue(CUdevice_attribute attr, CUdevice dev) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return 1980000;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return pciLocationOf(dev).bus;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      return pciLocationOf(dev).domain;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return 2048;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      return 1;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
      return 0;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return 232448;
    default:
      return 0;
  }
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  countCall(Entry::cuInit);
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.forked_after_init) return CUDA_ERROR_NOT_INITIALIZED;
  if (!d.initialized) {
    d.initialized = true;
    // Stream workers stop at exit; the state itself is never destroyed, so late workers stay safe.
    std::atexit([] { Stream::shutdownAll(1000); });
  }
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  countCall(Entry::cuDriverGetVersion);
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  countCall(Entry::cuGetErrorName);
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = findError(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  countCall(Entry::cuGetErrorString);
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = findError(error);
  *pStr = e ? e->description : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  countCall(Entry::cuGetProcAddress);
  return lookupEntryPoint(symbol, pfn, cudaVersion, flags, nullptr);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  countCall(Entry::cuGetProcAddress_v2);
  return lookupEntryPoint(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  countCall(Entry::cuDeviceGet);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  countCall(Entry::cuDeviceGetCount);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = requireInit(); r != CUDA_SUCCESS) return r;
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.mu);
  *count = static_cast<int>(d.devices.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  countCall(Entry::cuDeviceGetName);
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  const std::string text = "NVIDIA H200 (fakecuda " + std::to_string(dev) + ")";
  std::strncpy(name, text.c_str(), len - 1);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  countCall(Entry::cuDeviceGetAttribute);
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  if (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *pi = attributeValue(attrib, dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  countCall(Entry::cuDeviceGetPCIBusId);
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  const PciLocation location = pciLocationOf(dev);
  // domain:bus:device.function in hexadecimal, as the driver writes it; cut to len like a name.
  std::snprintf(pciBusId, static_cast<size_t>(len), "%04X:%02X:00.0", location.domain,
                location.bus);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  countCall(Entry::cuDeviceTotalMem);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  const uint64_t total = capacityOf(dev);
  *bytes = total > 0xffffffffu ? 0xffffffffu : static_cast<unsigned int>(total);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  countCall(Entry::cuDeviceTotalMem_v2);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(dev); r != CUDA_SUCCESS) return r;
  *bytes = capacityOf(dev);
  return CUDA_SUCCESS;
}

}  // extern "C"
