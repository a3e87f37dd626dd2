// Stands in for a driver newer than the shim: a stream-creating entry point the shim has no hook
// for ("cuStreamCreate_v99"), preloaded after the shim so that its dlsym(RTLD_NEXT, …) reaches the
// driver's cuStreamCreate without passing through the shim. Streams made through it are unseen.
#include <cuda.h>
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) CUresult cuStreamCreate_v99(CUstream* phStream,
                                                                              unsigned int flags) {
  static auto next =
      reinterpret_cast<CUresult (*)(CUstream*, unsigned int)>(dlsym(RTLD_NEXT, "cuStreamCreate"));
  if (next == nullptr) return CUDA_ERROR_NOT_FOUND;
  return next(phStream, flags);
}
