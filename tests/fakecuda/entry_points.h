// Per-symbol call counters and the cuGetProcAddress lookup, both generated from entry_points.def.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "shim/support/per_thread_counters.h"

namespace vramshim::fakecuda {

enum class Entry : unsigned {
#define FAKECUDA_ENTRY(base, version, symbol, per_thread) symbol,
#include "tests/fakecuda/entry_points.def"
#undef FAKECUDA_ENTRY
  kCount
};

// Calls per exported symbol, counted per thread, so that threads calling the driver at once share
// no cache line (benchmarks time the shim, not the simulator's counters).
using CallCounters = vramshim::support::PerThreadCounters<static_cast<size_t>(Entry::kCount)>;
extern CallCounters g_calls;
extern thread_local CallCounters::Slot t_calls_slot;

// Every exported cu* function counts its call first.
inline void countCall(Entry e) { g_calls.add(t_calls_slot, static_cast<size_t>(e)); }

// cuGetProcAddress's answer for a base name, a CUDA version and CU_GET_PROC_ADDRESS_* flags.
CUresult lookupEntryPoint(const char* base, void** pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status);

// Calls counted for one exported symbol name; 0 for names that are not exported.
uint64_t callsOf(const char* symbol);
void resetCalls();

}  // namespace vramshim::fakecuda
