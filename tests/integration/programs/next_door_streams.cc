// A helper that is no wrapper: it defines no driver function, and finds the driver's cuStreamCreate
// with dlsym(RTLD_NEXT, …), as helper libraries linked into a program do. Preloaded after the shim,
// "the next one" after it is the driver's, past the hooks; the shim must answer with its hook.
#include <cuda.h>
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) CUresult next_door_stream_create(
    CUstream* stream, unsigned int flags) {
  static auto create =
      reinterpret_cast<CUresult (*)(CUstream*, unsigned int)>(dlsym(RTLD_NEXT, "cuStreamCreate"));
  if (create == nullptr) return CUDA_ERROR_NOT_FOUND;
  return create(stream, flags);
}
