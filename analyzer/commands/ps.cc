// vramshim ps: the processes of this user that run under the shim, with their memory figures.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/live/collection.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

struct PsOptions {
  std::string directory;
  std::string format;
};

// The process's command line, its arguments joined by spaces; empty when unknown.
std::string command_line_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

// The table's column: cut to fit, "?" when unknown.
std::string shown_command_line(const std::string& text) {
  constexpr size_t kMaxShown = 100;
  if (text.size() > kMaxShown) return text.substr(0, kMaxShown - 3) + "...";
  return text.empty() ? "?" : text;
}

// One process's row: its figures summed over its devices, or why they are unknown.
struct ProcessRow {
  pid_t pid;
  std::string command;
  std::optional<nlohmann::json> stats;
  std::string error;
};

std::string bytes_text(const ProcessRow& row, const char* figure) {
  const std::optional<std::uint64_t> bytes =
      row.stats ? live::summed_device_figure(*row.stats, figure) : std::nullopt;
  return bytes ? analyzer::format_bytes(static_cast<int64_t>(*bytes)) : "?";
}

// `listing_cut`: a socket directory held more names than were looked at (live_sockets).
void print_table(const std::vector<ProcessRow>& rows, bool listing_cut) {
  if (rows.empty() && listing_cut) {
    std::fprintf(stderr,
                 "vramshim: no process of this user among the sockets looked at; not all were\n");
    return;
  }
  if (rows.empty()) {
    std::fprintf(stderr, "vramshim: no process of this user runs under vramshim\n");
    return;
  }
  std::printf("%8s  %10s  %10s  %10s  %s\n", "PID", "IN USE", "CACHED", "PEAK", "COMMAND");
  for (const ProcessRow& row : rows) {
    const std::string note = row.error.empty() ? "" : "  (" + row.error + ")";
    std::printf("%8d  %10s  %10s  %10s  %s%s\n", row.pid, bytes_text(row, "in_use_bytes").c_str(),
                bytes_text(row, "cached_bytes").c_str(),
                bytes_text(row, "peak_in_use_bytes").c_str(),
                printable(shown_command_line(row.command)).c_str(), printable(note).c_str());
  }
}

nlohmann::json rows_json(const std::vector<ProcessRow>& rows) {
  using nlohmann::json;
  json list = json::array();
  for (const ProcessRow& row : rows) {
    auto figure = [&](const char* name) {
      const std::optional<std::uint64_t> bytes =
          row.stats ? live::summed_device_figure(*row.stats, name) : std::nullopt;
      return bytes ? json(*bytes) : json();
    };
    list.push_back({{"pid", row.pid},
                    {"command", row.command.empty() ? json() : json(row.command)},
                    {"in_use_bytes", figure("in_use_bytes")},
                    {"cached_bytes", figure("cached_bytes")},
                    {"peak_in_use_bytes", figure("peak_in_use_bytes")},
                    {"devices", row.stats ? row.stats->value("devices", json::array()) : json()},
                    {"error", row.error.empty() ? json() : json(row.error)}});
  }
  json doc = analyzer::json_document("ps");
  doc["processes"] = std::move(list);
  return doc;
}

void list_processes(const PsOptions& options) {
  std::vector<ProcessRow> rows;
  bool listing_cut = false;
  for (const SocketEntry& entry :
       live_sockets(socket_directories(options.directory), &listing_cut)) {
    ProcessRow row{entry.pid, command_line_of(entry.pid), std::nullopt, {}};
    try {
      row.stats = require_ok(ask(entry, "stats", 5000), entry.pid);
    } catch (const UntrustedPeer& e) {
      analyzer::print_diagnostic(e.what());
      continue;
    } catch (const std::exception& e) {
      row.error = e.what();
    }
    rows.push_back(std::move(row));
  }
  if (options.format == "json") {
    analyzer::write_json_document(std::cout, rows_json(rows));
  } else {
    print_table(rows, listing_cut);
  }
}

}  // namespace

void add_ps_command(CLI::App& app) {
  auto options = std::make_shared<PsOptions>();
  CLI::App* command = app.add_subcommand(
      "ps",
      "List this user's processes running under vramshim (removes sockets of dead processes)");
  command->add_option("--dir", options->directory, "Look only in this socket directory");
  add_format_option(command, options->format);
  command->callback([options] { list_processes(*options); });
}

}  // namespace vramshim::cli
