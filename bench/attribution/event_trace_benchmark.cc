// The cost of recording one allocation event (shim/attribution/event_trace), per thread, with one
// and four recording threads, and the cost with the trace off for comparison.
#include <benchmark/benchmark.h>

#include "shim/attribution/event_trace.h"

namespace vramshim::attribution {
namespace {

EventTrace& trace_of_capacity(size_t capacity) {
  static EventTrace* const on = new EventTrace(EventTrace::kDefaultCapacity);
  static EventTrace* const off = new EventTrace(0);
  return capacity > 0 ? *on : *off;
}

void BM_RecordEvent(benchmark::State& state) {
  EventTrace& trace = trace_of_capacity(static_cast<size_t>(state.range(0)));
  uint64_t address = 0x7f0000000000 + static_cast<uint64_t>(state.thread_index()) * 4096;
  for (auto _ : state) {
    trace.record(EventType::kAlloc, 0, address, 4096, 0, 17);
    address += 512;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordEvent)
    ->Arg(0)
    ->Arg(EventTrace::kDefaultCapacity)
    ->Threads(1)
    ->Threads(4)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace
}  // namespace vramshim::attribution

BENCHMARK_MAIN();
