// The `stats` answer in the Prometheus text exposition format (for node exporter's textfile
// collector).
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

namespace vramshim::cli {

// One metric family per numeric device figure, each with # HELP and # TYPE lines and one sample per
// device labelled {pid="…",device="…"}: counters (…_calls, pool_hits, …) get a _total suffix, the
// rest are gauges. Figures that are null (limit_bytes without a limit) are left out.
std::string to_prometheus(const nlohmann::json& stats, pid_t pid);

}  // namespace vramshim::cli
