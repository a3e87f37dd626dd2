// Reading the shim's JSON reports in tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vramshim::testing {

nlohmann::json read_report(const std::string& path);

// The frames of a site's stack, innermost first; empty when stacks were off.
std::vector<nlohmann::json> stack_frames(const nlohmann::json& report, const nlohmann::json& site);

// The sites whose stack has a frame named `function` (the report's dladdr names).
std::vector<nlohmann::json> sites_with_function(const nlohmann::json& report,
                                                const std::string& function);

// The module paths of every frame of every stack.
std::vector<std::string> stack_module_paths(const nlohmann::json& report);

}  // namespace vramshim::testing
