#include "tests/fakecuda/entry_points.h"

#include <cstring>

namespace vramshim::fakecuda {
namespace {

struct EntryPoint {
  const char* base;
  int version;
  const char* symbol;
  bool per_thread;
  void* function;
};

const EntryPoint kEntryPoints[] = {
#define FAKECUDA_ENTRY(base, version, symbol, per_thread) \
  {#base, version, #symbol, per_thread != 0, reinterpret_cast<void*>(&::symbol)},
#include "tests/fakecuda/entry_points.def"
#undef FAKECUDA_ENTRY
};

// The row of `base` with the highest version not above `version` among rows of one kind; null if
// none.
const EntryPoint* newest(const char* base, int version, bool per_thread) {
  const EntryPoint* best = nullptr;
  for (const EntryPoint& e : kEntryPoints) {
    if (e.per_thread != per_thread || e.version > version || std::strcmp(e.base, base) != 0)
      continue;
    if (best == nullptr || e.version > best->version) best = &e;
  }
  return best;
}

}  // namespace

CallCounters g_calls;
thread_local CallCounters::Slot t_calls_slot;
// fakecuda_reset_counters() moves the origin instead of clearing other threads' counters.
std::atomic<uint64_t> g_calls_at_reset[static_cast<unsigned>(Entry::kCount)];

CUresult lookupEntryPoint(const char* base, void** pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (base == nullptr || pfn == nullptr || (flags & ~kKnownFlags) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const EntryPoint* found = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) found = newest(base, version, true);
  if (found == nullptr) found = newest(base, version, false);
  if (found != nullptr) {
    *pfn = found->function;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  bool known = false;
  for (const EntryPoint& e : kEntryPoints) known = known || std::strcmp(e.base, base) == 0;
  if (status)
    *status =
        known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

uint64_t callsOf(const char* symbol) {
  if (symbol == nullptr) return 0;
  for (unsigned i = 0; i < static_cast<unsigned>(Entry::kCount); ++i) {
    if (std::strcmp(kEntryPoints[i].symbol, symbol) == 0) {
      return g_calls.sum(i) - g_calls_at_reset[i].load();
    }
  }
  return 0;
}

void resetCalls() {
  for (unsigned i = 0; i < static_cast<unsigned>(Entry::kCount); ++i) {
    g_calls_at_reset[i].store(g_calls.sum(i));
  }
}

}  // namespace vramshim::fakecuda
