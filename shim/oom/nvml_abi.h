// The few declarations of the NVIDIA management library (libnvidia-ml.so.1) the shim calls, written
// from NVML's documentation: the build has no nvml.h, and the shim never links NVML (it is opened
// with dlopen only when asked). The NVML test double (tests/nvml) implements the same ones.
#pragma once

#include <cstddef>

namespace vramshim::oom::nvml {

// nvmlReturn_t, an enum of int size.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;

// nvmlDevice_t: a pointer to an opaque struct.
struct DeviceOpaque;
using Device = DeviceOpaque*;

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it: the layout of
// nvmlProcessInfo_v2_t (drivers R510 on, except R535.43 to R535.86, see kWidestProcessInfoBytes).
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // NVML_VALUE_NOT_AVAILABLE where NVML may not say
  unsigned int gpuInstanceId;        // MIG only; 0xFFFFFFFF otherwise
  unsigned int computeInstanceId;
};
static_assert(sizeof(ProcessInfo) == 24 && offsetof(ProcessInfo, usedGpuMemory) == 8 &&
                  offsetof(ProcessInfo, computeInstanceId) == 20,
              "nvmlProcessInfo_t's layout");

// NVML_VALUE_NOT_AVAILABLE.
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

// Drivers R535.43 to R535.86 wrote 32-byte entries through the same _v3 entry point (an extra
// usedGpuCcProtectedMemory): a buffer given to it has this much room per entry, so that such a
// driver cannot write past it.
inline constexpr size_t kWidestProcessInfoBytes = 32;

// The largest bus id string NVML takes (NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE).
inline constexpr size_t kPciBusIdBufferSize = 32;

// The entry points, by their exported names.
using InitV2Fn = Return (*)();                         // nvmlInit_v2
using ShutdownFn = Return (*)();                       // nvmlShutdown
using ErrorStringFn = const char* (*)(Return result);  // nvmlErrorString
using DeviceGetHandleByPciBusIdV2Fn = Return (*)(const char* pciBusId, Device* device);
using DeviceGetComputeRunningProcessesV3Fn = Return (*)(Device device, unsigned int* infoCount,
                                                        ProcessInfo* infos);

}  // namespace vramshim::oom::nvml
