// Expansion of VRAMSHIM_REPORT patterns into report paths.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vramshim::report {

struct ReportPatternValues {
  int pid;
  std::string host;
  std::optional<std::string> rank;  // rank_from_environment(); %r is "0" when it is nullopt
  uint64_t unix_time;               // seconds
  uint64_t sequence;                // 0, 1, 2 … per process
};

// %p pid, %h host, %r rank, %t unix time, %n sequence, %% a literal '%'. Any other '%' sequence,
// and a trailing '%', are kept as written. A relative result is relative to the working directory
// at the time the report is written.
std::string expand_report_pattern(std::string_view pattern, const ReportPatternValues& values);

// Where the crash report goes instead of `report_path`, so it never replaces another report:
// ".crash" before a final ".json", else after the name ("vramshim.42.json" →
// "vramshim.42.crash.json", "mem" → "mem.crash").
std::string crash_report_path(std::string_view report_path);

}  // namespace vramshim::report
