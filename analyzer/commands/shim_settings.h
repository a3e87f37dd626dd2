// The shim's settings that `run` and `jupyter install` take as options, and the VRAMSHIM_*
// variables they become in the environment of the process started under the shim.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace vramshim::cli {

struct ShimSettings {
  std::string limit;     // VRAMSHIM_LIMIT
  std::string stacks;    // VRAMSHIM_STACKS
  std::string report;    // VRAMSHIM_REPORT
  bool no_pool = false;  // VRAMSHIM_POOL=off
};

// Adds --limit, --stacks, --report and --no-pool to `command`.
void add_shim_setting_options(CLI::App* command, ShimSettings& settings);

// Throws UsageError with a one-line message naming `command` ("run") when --limit or --stacks is
// not a value the shim takes (it would ignore it with a warning, which a user who asked for it
// would miss).
void check_shim_settings(const ShimSettings& settings, const std::string& command);

// The variables for the settings given, name and value: none for a setting left empty.
std::vector<std::pair<std::string, std::string>> shim_variables(const ShimSettings& settings);

}  // namespace vramshim::cli
