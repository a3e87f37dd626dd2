// Per-symbol call counters and the cuGetProcAddress lookup, both generated from entry_points.def.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace vramshim::fakecuda {

enum class Entry : unsigned {
#define FAKECUDA_ENTRY(base, version, symbol, per_thread) symbol,
#include "tests/fakecuda/entry_points.def"
#undef FAKECUDA_ENTRY
  kCount
};

extern std::atomic<uint64_t> g_calls[static_cast<unsigned>(Entry::kCount)];

// Every exported cu* function counts its call first.
inline void countCall(Entry e) {
  g_calls[static_cast<unsigned>(e)].fetch_add(1, std::memory_order_relaxed);
}

// cuGetProcAddress's answer for a base name, a CUDA version and CU_GET_PROC_ADDRESS_* flags.
CUresult lookupEntryPoint(const char* base, void** pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status);

// Calls counted for one exported symbol name; 0 for names that are not exported.
uint64_t callsOf(const char* symbol);
void resetCalls();

}  // namespace vramshim::fakecuda
