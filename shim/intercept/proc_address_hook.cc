// The third door: cuGetProcAddress (v1 and v2). The driver answers first; the exact function it
// returned for that name, version and flags is then swapped for the hook of that exact variant
// (identity, never name guessing). A function the shim does not hook is returned untouched.
#include "shim/intercept/hook_declarations.h"
#include "shim/intercept/unhooked_stream_source.h"

namespace vramshim::hooks {
namespace {

CUresult swap_for_hook(CUresult result, const char* symbol, void** pfn) {
  if (result != CUDA_SUCCESS || pfn == nullptr || *pfn == nullptr) return result;
  const intercept::HookId id = intercept::find_hook_by_real(*pfn);
  if (id != intercept::HookId::kNone) {
    *pfn = intercept::hook_address(id);
  } else if (intercept::creates_streams(symbol)) {
    intercept::note_unhooked_stream_source(symbol);
  }
  return result;
}

}  // namespace

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return swap_for_hook(real::cuGetProcAddress(symbol, pfn, cudaVersion, flags), symbol, pfn);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return swap_for_hook(real::cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus),
                       symbol, pfn);
}

}  // namespace vramshim::hooks
