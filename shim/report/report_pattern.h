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
// and a trailing '%', are kept as written. %r is empty for a rank that is_safe_rank() refuses. A
// relative result is relative to the working directory at the time the report is written (see
// absolute_report_pattern).
std::string expand_report_pattern(std::string_view pattern, const ReportPatternValues& values);

// Whether %r may insert `rank` into a path: letters, digits, '-', '_' and '.', not "." or "..".
// RANK comes from the environment; "../../etc" or "a/b" would move the report elsewhere.
bool is_safe_rank(std::string_view rank);

// `pattern` made absolute against the working directory now (its '%' doubled), so that a program
// that later changes directory still reports where it started; unchanged when absolute or when the
// working directory cannot be read.
std::string absolute_report_pattern(const std::string& pattern);

// The name of a report of another kind beside the one at `path`, so the two never overwrite each
// other: "mem.3.json" with variant "oom" is "mem.3.oom.json" (and "crash", "mem.3.crash.json"); a
// name without ".json" gets ".oom" appended.
std::string report_variant(const std::string& path, const char* variant);

}  // namespace vramshim::report
