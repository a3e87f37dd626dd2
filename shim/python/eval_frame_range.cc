#include "shim/python/eval_frame_range.h"

#include <dlfcn.h>
#include <link.h>

namespace vramshim::python {

EvalFrameRange EvalFrameRange::of_function(const void* function) {
  if (function == nullptr) return {};
  Dl_info info;
  void* symbol_entry = nullptr;
  if (dladdr1(function, &info, &symbol_entry, RTLD_DL_SYMENT) == 0 || symbol_entry == nullptr ||
      info.dli_saddr != function) {
    return {};
  }
  const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
  if (symbol->st_size == 0) return {};
  const auto begin = reinterpret_cast<uintptr_t>(function);
  return {begin, begin + symbol->st_size};
}

}  // namespace vramshim::python
