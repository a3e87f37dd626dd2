// A plugin linked with the driver, which a program dlopens with RTLD_DEEPBIND: its own references
// bind to its dependencies first, so its cuStreamCreate is the driver's, past the hooks.
#include <cuda.h>

extern "C" __attribute__((visibility("default"))) CUresult deepbind_stream_create(
    CUstream* stream, unsigned int flags) {
  return cuStreamCreate(stream, flags);
}
