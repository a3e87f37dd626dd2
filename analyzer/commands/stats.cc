// vramshim stats: one process's memory figures, for people, scripts (--json) or Prometheus.
#include <cstdio>
#include <memory>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/render/prometheus.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

struct StatsOptions {
  pid_t pid = 0;
  bool json = false;
  bool prometheus = false;
};

std::string figure(const nlohmann::json& device, const char* name) {
  if (!device.contains(name) || device[name].is_null()) return "none";
  if (!device[name].is_number_unsigned()) return device[name].dump();
  return analyzer::format_bytes(static_cast<int64_t>(device[name].get<std::uint64_t>()));
}

std::string count(const nlohmann::json& device, const char* name) {
  return device.contains(name) ? device[name].dump() : "?";
}

void show_stats(const StatsOptions& options) {
  const nlohmann::json stats = require_ok(ask(socket_for_pid(options.pid), "stats"), options.pid);
  if (options.json) {
    std::printf("%s\n", stats.dump().c_str());
    return;
  }
  if (options.prometheus) {
    std::printf("%s", to_prometheus(stats, options.pid).c_str());
    return;
  }
  std::printf("pid %d\n", options.pid);
  const nlohmann::json devices = stats.value("devices", nlohmann::json::array());
  if (devices.empty()) std::printf("  no GPU memory used yet\n");
  for (const nlohmann::json& device : devices) {
    std::printf("  device %s: in use %s, cached %s, reserved %s, peak %s, limit %s\n",
                count(device, "device").c_str(), figure(device, "in_use_bytes").c_str(),
                figure(device, "cached_bytes").c_str(), figure(device, "reserved_bytes").c_str(),
                figure(device, "peak_in_use_bytes").c_str(), figure(device, "limit_bytes").c_str());
    std::printf("            driver allocations %s, pool hits %s\n",
                count(device, "driver_alloc_calls").c_str(), count(device, "pool_hits").c_str());
  }
}

}  // namespace

void add_stats_command(CLI::App& app) {
  auto options = std::make_shared<StatsOptions>();
  CLI::App* command = app.add_subcommand("stats", "Show a running process's GPU memory figures");
  command->add_option("pid", options->pid, "The process")->required();
  CLI::Option* json =
      command->add_flag("--json", options->json, "The process's answer as one JSON line");
  command
      ->add_flag("--prometheus", options->prometheus,
                 "Prometheus text format (for node exporter's textfile collector)")
      ->excludes(json);
  command->callback([options] { show_stats(*options); });
}

}  // namespace vramshim::cli
