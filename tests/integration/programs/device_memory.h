// The allocation properties of VMM device memory (cuMemCreate) on one device.
#pragma once

#include <cuda.h>

inline CUmemAllocationProp device_memory(int device = 0) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}
