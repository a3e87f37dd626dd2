// What plugin_host calls in libplugin_a.so and libplugin_b.so.
#pragma once

#include <cuda.h>

#include <cstddef>

using PluginAlloc = CUresult (*)(CUdeviceptr*, size_t);
using PluginFree = CUresult (*)(CUdeviceptr);
using PluginRun = void (*)(PluginAlloc, PluginFree);
