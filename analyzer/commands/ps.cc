// vramshim ps: the processes of this user that run under the shim, with their memory figures.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

std::string command_line_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  constexpr size_t kMaxShown = 100;
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown - 3) + "...";
  return text.empty() ? "?" : text;
}

std::uint64_t total(const nlohmann::json& stats, const char* figure) {
  std::uint64_t sum = 0;
  for (const nlohmann::json& device : stats.value("devices", nlohmann::json::array())) {
    if (device.contains(figure) && device[figure].is_number_unsigned()) {
      sum += device[figure].get<std::uint64_t>();
    }
  }
  return sum;
}

void list_processes(const std::string& only_directory) {
  bool header_printed = false;
  for (const SocketEntry& entry : live_sockets(socket_directories(only_directory))) {
    std::string in_use = "?", cached = "?", peak = "?", note;
    try {
      const nlohmann::json stats = require_ok(ask(entry, "stats", 5000), entry.pid);
      in_use = analyzer::format_bytes(static_cast<int64_t>(total(stats, "in_use_bytes")));
      cached = analyzer::format_bytes(static_cast<int64_t>(total(stats, "cached_bytes")));
      peak = analyzer::format_bytes(static_cast<int64_t>(total(stats, "peak_in_use_bytes")));
    } catch (const UntrustedPeer& e) {
      std::fprintf(stderr, "vramshim: %s\n", e.what());
      continue;
    } catch (const std::exception& e) {
      note = "  (" + std::string(e.what()) + ")";
    }
    if (!header_printed) {
      std::printf("%8s  %10s  %10s  %10s  %s\n", "PID", "IN USE", "CACHED", "PEAK", "COMMAND");
      header_printed = true;
    }
    std::printf("%8d  %10s  %10s  %10s  %s%s\n", entry.pid, in_use.c_str(), cached.c_str(),
                peak.c_str(), command_line_of(entry.pid).c_str(), note.c_str());
  }
  if (!header_printed)
    std::fprintf(stderr, "vramshim: no process of this user runs under vramshim\n");
}

}  // namespace

void add_ps_command(CLI::App& app) {
  auto directory = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "ps",
      "List this user's processes running under vramshim (removes sockets of dead processes)");
  command->add_option("--dir", *directory, "Look only in this socket directory");
  command->callback([directory] { list_processes(*directory); });
}

}  // namespace vramshim::cli
