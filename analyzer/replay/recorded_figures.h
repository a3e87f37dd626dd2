// The figures of the allocator that recorded a trace, from the trace alone.
#pragma once

#include "analyzer/model/allocation_trace.h"
#include "analyzer/replay/memory_figures.h"

namespace vramshim::analyzer {

// The recording allocator's (PyTorch's) peak reserved memory, driver calls and free ranges at that
// peak, from the trace's reservations, and the trace's peak in use; without reservations in the
// trace only peak_in_use_bytes is filled. Independent of vramshim's pool.
MemoryFigures recorded_figures(const DeviceTrace& trace);

}  // namespace vramshim::analyzer
