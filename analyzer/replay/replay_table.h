// A replay's figures as a table for people, or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/replay/trace_replay.h"

namespace vramshim::analyzer {

// The design target: peak reserved memory within 10 % of PyTorch's own allocator's
// (docs/design.md, "The pool").
inline constexpr double kPeakReservedTarget = 1.10;

// Per device: one row for the recording allocator (when the trace records its reservations) and
// one per policy, then what the columns mean.
void render_replay_text(std::ostream& out, const TraceReplay& replay);

// The same figures in bytes, counts and nanoseconds; absent figures are null.
nlohmann::json replay_json(const TraceReplay& replay);

}  // namespace vramshim::analyzer
