// vramshim stats: the memory figures of one running process, or of all of them on this node
// (--all), for people, scripts (--format json) or Prometheus (--format prometheus, --textfile).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/files/atomic_file.h"
#include "analyzer/live/collection.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/prometheus.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

// The file written in --textfile's directory (node_exporter's textfile collector reads *.prom).
constexpr char kTextfileName[] = "vramshim.prom";

struct StatsOptions {
  pid_t pid = 0;
  bool all = false;
  std::string format;
  bool json = false;        // --json: --format json
  bool prometheus = false;  // --prometheus: --format prometheus
  std::string textfile_directory;
  std::string only_directory;
  int top_sites = 10;
  int budget_ms = 1000;
};

// A figure of the answer in bytes; "?" for one that is not a figure (live::answer_figure).
std::string figure(const nlohmann::json& device, const char* name) {
  if (!device.contains(name) || device[name].is_null()) return "none";
  const std::optional<std::uint64_t> bytes = live::answer_figure(device, name);
  return bytes ? analyzer::format_bytes(static_cast<int64_t>(*bytes)) : "?";
}

std::string count(const nlohmann::json& device, const char* name) {
  const std::optional<std::uint64_t> value = live::answer_figure(device, name);
  return value ? std::to_string(*value) : "?";
}

std::string device_text(const nlohmann::json& device) {
  const std::optional<int> number = live::device_number(device);
  return number ? std::to_string(*number) : "?";
}

// `owner`: the uid the process was found as (--all: root sees every user's), shown after its pid.
void print_figures(pid_t pid, const nlohmann::json& stats, std::optional<uid_t> owner = {}) {
  std::string command;
  if (stats.contains("process") && stats["process"].is_object() &&
      stats["process"].value("command", nlohmann::json()).is_string()) {
    command = "  " + printable(stats["process"]["command"].get<std::string>());
  }
  const std::string uid = owner ? "  uid " + std::to_string(*owner) : "";
  std::printf("pid %d%s%s\n", pid, uid.c_str(), command.c_str());
  const nlohmann::json devices = stats.value("devices", nlohmann::json::array());
  if (devices.empty()) std::printf("  no GPU memory used yet\n");
  for (const nlohmann::json& device : devices) {
    std::printf("  device %s: in use %s, cached %s, reserved %s, peak %s, limit %s\n",
                device_text(device).c_str(), figure(device, "in_use_bytes").c_str(),
                figure(device, "cached_bytes").c_str(), figure(device, "reserved_bytes").c_str(),
                figure(device, "peak_in_use_bytes").c_str(), figure(device, "limit_bytes").c_str());
    std::printf("            driver allocations %s, pool hits %s\n",
                count(device, "driver_alloc_calls").c_str(), count(device, "pool_hits").c_str());
  }
}

live::CollectOptions collect_options(const StatsOptions& options) {
  live::CollectOptions collect;
  collect.budget_ms = options.budget_ms;
  collect.top_sites = options.top_sites;
  return collect;
}

void show_one(const StatsOptions& options) {
  const SocketEntry socket = socket_for_pid(options.pid);
  if (options.format == "prometheus") {
    const live::Collection collection = live::collect({socket}, collect_options(options));
    if (collection.processes.empty()) throw std::runtime_error(collection.problems.at(0));
    std::printf("%s", to_prometheus(collection).c_str());
    return;
  }
  const nlohmann::json stats = require_ok(ask(socket, "stats"), options.pid);
  if (options.format == "json") {
    nlohmann::json doc = analyzer::json_document("stats");
    doc["pid"] = options.pid;
    for (const auto& [name, value] : stats.items()) {
      if (name != "ok" && !doc.contains(name)) doc[name] = value;
    }
    analyzer::write_json_document(std::cout, doc);
  } else {
    print_figures(options.pid, stats);
  }
}

nlohmann::json collection_json(const live::Collection& collection,
                               const std::set<uid_t>& listings_cut, int top_sites) {
  nlohmann::json processes = nlohmann::json::array();
  for (const live::ProcessSample& process : collection.processes) {
    // Sites the answer left out; null when the shim does not say (an older one).
    nlohmann::json omitted;
    if (process.sites.is_array() && process.live_sites.is_number_unsigned()) {
      const uint64_t live = process.live_sites.get<uint64_t>();
      omitted = live > process.sites.size() ? live - process.sites.size() : 0;
    }
    processes.push_back({{"pid", process.socket.pid},
                         {"uid", process.socket.owner},
                         {"stats", process.stats},
                         {"sites", process.sites},
                         {"omitted_rows", omitted}});
  }
  nlohmann::json skipped = nlohmann::json::object();
  for (const live::Skipped reason : live::kSkippedReasons) {
    skipped[live::skipped_name(reason)] = collection.skipped_count(reason);
  }
  nlohmann::json doc = analyzer::json_document("stats");
  doc["processes"] = std::move(processes);
  doc["skipped"] = std::move(skipped);
  doc["problems"] = collection.problems;
  // The users of whose processes some were not asked: not to be taken for none running.
  doc["listings_cut"] = listings_cut;
  doc["sites_asked"] = top_sites;
  doc["collection_seconds"] = collection.seconds;
  return doc;
}

void show_all(const StatsOptions& options) {
  std::vector<std::string> refused;
  std::set<uid_t> listings_cut;
  const live::Collection collection =
      live::collect_all(options.only_directory, collect_options(options), &refused, &listings_cut);
  for (const std::string& why : refused) {
    analyzer::print_diagnostic(why);
  }
  if (options.format == "json") {
    analyzer::write_json_document(std::cout,
                                  collection_json(collection, listings_cut, options.top_sites));
    return;
  }
  for (const std::string& problem : collection.problems) {
    analyzer::print_diagnostic(problem + "; skipped");
  }
  if (!options.textfile_directory.empty()) {
    const std::string path = options.textfile_directory + "/" + kTextfileName;
    const std::string text = to_prometheus(collection, listings_cut);
    analyzer::write_file_atomically(path, [&](std::ostream& out) { out << text; });
    return;
  }
  if (options.format == "prometheus") {
    std::printf("%s", to_prometheus(collection, listings_cut).c_str());
    return;
  }
  // Not when a listing was cut: processes may run whose sockets were not looked at.
  if (collection.processes.empty() && collection.problems.empty() && listings_cut.empty()) {
    std::fprintf(stderr, "vramshim: no process of this user runs under vramshim\n");
  }
  for (const live::ProcessSample& process : collection.processes) {
    print_figures(process.socket.pid, process.stats, process.socket.owner);
  }
}

}  // namespace

void add_stats_command(CLI::App& app) {
  auto options = std::make_shared<StatsOptions>();
  CLI::App* command = app.add_subcommand(
      "stats", "Show the GPU memory figures of a running process, or of all of them (--all)");
  CLI::Option* pid = command->add_option("pid", options->pid, "The process");
  CLI::Option* all = command->add_flag(
      "--all", options->all,
      "Every process of this user running under vramshim on this node (every user's, for root), "
      "asked at once");
  pid->excludes(all);
  CLI::Option* format = add_format_option(
      command, options->format, {"text", "json", "prometheus"},
      "prometheus: the Prometheus text format, one HELP and TYPE line per metric");
  CLI::Option* json =
      command->add_flag("--json", options->json, "The same as --format json")->excludes(format);
  CLI::Option* prometheus =
      command->add_flag("--prometheus", options->prometheus, "The same as --format prometheus")
          ->excludes(json)
          ->excludes(format);
  command
      ->add_option("--textfile", options->textfile_directory,
                   "With --all: write DIR/vramshim.prom (Prometheus format) atomically, for "
                   "node_exporter's textfile collector")
      ->excludes(format)
      ->excludes(json)
      ->excludes(prometheus)
      ->needs(all);
  command
      ->add_option(
          "--top-sites", options->top_sites,
          "Sites asked of each process for the Prometheus output and for --all's JSON, by live "
          "bytes (0: none)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command
      ->add_option("--budget", options->budget_ms,
                   "With --all or --prometheus: milliseconds asking the processes may take; a "
                   "process that has not answered by then is skipped and counted")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  command->add_option("--dir", options->only_directory,
                      "With --all: look only in this socket directory");
  command->callback([options] {
    if (!options->all && options->pid == 0) throw std::runtime_error("stats needs PID or --all");
    if (options->json) options->format = "json";
    if (options->prometheus) options->format = "prometheus";
    if (options->all) {
      show_all(*options);
    } else {
      show_one(*options);
    }
  });
}

}  // namespace vramshim::cli
