// <cuda.h> as the shim sees it: with __CUDA_API_VERSION_INTERNAL, cuda.h neither renames entry
// points to their versioned names nor hides the legacy ones, so `cuMemAlloc` is the legacy symbol
// and `cuMemAlloc_v2` the current one, each with its own real signature.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
