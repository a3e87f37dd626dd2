// Reading a device range back, for the programs that check what the pool's reuse left in it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "tests/integration/programs/program_support.h"

// How many of the `size` bytes at `ptr` differ from `expected` (copied to the host to look).
inline size_t bytes_other_than(CUdeviceptr ptr, size_t size, unsigned char expected) {
  std::vector<unsigned char> host(size);
  CHECK_CU(cuMemcpyDtoH(host.data(), ptr, size));
  size_t differing = 0;
  for (unsigned char byte : host) differing += byte != expected;
  return differing;
}
