// What `vramshim run` prints when its process ends: where the report is and what it says, briefly.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace vramshim::cli {

// The report a process wrote at exit under VRAMSHIM_REPORT `pattern` (relative to the current
// directory): %p is `pid`, %h this host's name, %% a percent sign; %r, %t and %n match anything,
// and of several matches the newest file wins. nullopt if there is none.
std::optional<std::string> find_report(const std::string& pattern, pid_t pid);

// A few lines: live bytes at exit, the peak, and the top five sites at the peak by bytes_at_peak,
// each with its innermost three function names (demangled). Tolerates missing members.
std::string summarize_report(const nlohmann::json& report);

}  // namespace vramshim::cli
