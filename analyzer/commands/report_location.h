// Where a process that ran under the shim left its report.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace vramshim::cli {

// The report a process wrote at exit under VRAMSHIM_REPORT `pattern` (relative to the current
// directory): %p is `pid`, %h this host's name, %% a percent sign; %r, %t and %n match anything,
// and of several matches the newest file wins. nullopt if there is none.
std::optional<std::string> find_report(const std::string& pattern, pid_t pid);

}  // namespace vramshim::cli
