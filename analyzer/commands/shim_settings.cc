#include "analyzer/commands/shim_settings.h"

#include <cstdint>
#include <optional>

#include "analyzer/commands/command.h"
#include "shim/control/size.h"

namespace vramshim::cli {

void add_shim_setting_options(CLI::App* command, ShimSettings& settings) {
  command->add_option("--limit", settings.limit,
                      "Per-device cap on bytes in use (VRAMSHIM_LIMIT), e.g. 8G");
  command->add_option("--stacks", settings.stacks, "Stack capture: all, off or sample:SIZE");
  command->add_option(
      "--report", settings.report,
      "Report file pattern (%p pid, %h host, %r rank, %t time, %n sequence) or off");
  command->add_flag("--no-pool", settings.no_pool, "Pass allocations to the driver one by one");
}

void check_shim_settings(const ShimSettings& settings, const std::string& command) {
  // As the shim takes VRAMSHIM_LIMIT: a value it would refuse runs the job with no cap at all.
  if (!settings.limit.empty()) {
    const std::optional<std::uint64_t> bytes = control::parse_size(settings.limit);
    if (!bytes) {
      throw UsageError(
          command + ": --limit " + settings.limit +
          " is not a size (bytes, or a number with K/M/G/T, KB/MB/GB/TB or KiB/MiB/GiB/TiB)");
    }
    if (*bytes == 0 || *bytes > control::kMaxLimitBytes) {
      throw UsageError(command + ": --limit " + settings.limit +
                       " is not a size above 0 and at most 4 EiB");
    }
  }
  if (!settings.stacks.empty() && settings.stacks != "all" && settings.stacks != "off") {
    const bool sample = settings.stacks.rfind("sample:", 0) == 0 &&
                        control::parse_size(settings.stacks.substr(7)).value_or(0) > 0;
    if (!sample) throw UsageError(command + ": --stacks must be all, off or sample:SIZE");
  }
}

std::vector<std::pair<std::string, std::string>> shim_variables(const ShimSettings& settings) {
  std::vector<std::pair<std::string, std::string>> variables;
  if (!settings.limit.empty()) variables.push_back({"VRAMSHIM_LIMIT", settings.limit});
  if (!settings.stacks.empty()) variables.push_back({"VRAMSHIM_STACKS", settings.stacks});
  if (!settings.report.empty()) variables.push_back({"VRAMSHIM_REPORT", settings.report});
  if (settings.no_pool) variables.push_back({"VRAMSHIM_POOL", "off"});
  return variables;
}

}  // namespace vramshim::cli
