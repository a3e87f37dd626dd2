// The driver entry points the door programs use, found by dlsym on a handle, RTLD_DEFAULT or
// cuGetProcAddress, the way JAX, TensorFlow and the CUDA runtime find them.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include "tests/integration/programs/program_support.h"

struct DriverByDlsym {
  CUresult (*init)(unsigned int);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*primary_retain)(CUcontext*, CUdevice);
  CUresult (*primary_release)(CUdevice);
  CUresult (*set_current)(CUcontext);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*get_proc_address)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
};

template <typename Fn>
void lookup(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr) {
    std::fprintf(stderr, "dlsym(%s) failed: %s\n", name, dlerror());
    std::exit(2);
  }
}

inline DriverByDlsym driver_by_dlsym(void* handle) {
  DriverByDlsym d{};
  lookup(handle, "cuInit", &d.init);
  lookup(handle, "cuDeviceGet", &d.device_get);
  lookup(handle, "cuDevicePrimaryCtxRetain", &d.primary_retain);
  lookup(handle, "cuDevicePrimaryCtxRelease_v2", &d.primary_release);
  lookup(handle, "cuCtxSetCurrent", &d.set_current);
  lookup(handle, "cuMemAlloc_v2", &d.mem_alloc);
  lookup(handle, "cuMemFree_v2", &d.mem_free);
  lookup(handle, "cuGetProcAddress_v2", &d.get_proc_address);
  return d;
}

// Initializes the driver and makes device 0's primary context current on this thread.
inline CUdevice make_context_current(const DriverByDlsym& d) {
  CHECK_CU(d.init(0));
  CUdevice device;
  CHECK_CU(d.device_get(&device, 0));
  CUcontext context;
  CHECK_CU(d.primary_retain(&context, device));
  CHECK_CU(d.set_current(context));
  return device;
}
