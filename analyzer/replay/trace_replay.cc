#include "analyzer/replay/trace_replay.h"

#include "analyzer/replay/pool_replay.h"
#include "analyzer/replay/recorded_figures.h"

namespace vramshim::analyzer {

TraceReplay replay_trace(const AllocationTrace& trace, const std::string& source,
                         const std::vector<ReplayPolicy>& policies, int timed_runs) {
  TraceReplay replay{source, trace.format, trace.allocator, timed_runs, {}};
  for (const DeviceTrace& device : trace.devices) {
    DeviceReplay result;
    result.device = device.device;
    result.allocations = device.allocations;
    result.allocations_before_trace = device.allocations_before_trace;
    result.frees = device.frees;
    result.out_of_memory_events = device.out_of_memory_events;
    result.recorded = recorded_figures(device);
    result.records_reservations = device.records_reservations;
    for (const ReplayPolicy& policy : policies) {
      result.policies.push_back(
          {policy.name, replay_through_pool(device, policy.options, timed_runs)});
    }
    replay.devices.push_back(std::move(result));
  }
  return replay;
}

}  // namespace vramshim::analyzer
