// What the runtime gives its pools to attribute their allocations, for tests of pools: a tracker
// without stacks (one site per kind) and the TrackerTagger over it.
#pragma once

#include "shim/attribution/event_trace.h"
#include "shim/attribution/tracker.h"
#include "shim/runtime/tracker_tagger.h"

namespace vramshim::pool::testing {

struct PoolAttribution {
  explicit PoolAttribution(size_t trace_capacity = 1024) : trace(trace_capacity) {}
  static attribution::TrackerOptions without_stacks() {
    attribution::TrackerOptions options;
    options.stacks = attribution::StackMode::kOff;
    return options;
  }
  attribution::Tracker tracker{without_stacks()};
  attribution::EventTrace trace;
  runtime::TrackerTagger tagger{tracker, trace};
};

}  // namespace vramshim::pool::testing
