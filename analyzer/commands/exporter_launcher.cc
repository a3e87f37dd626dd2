// vramshim exporter: runs vramshim-exporter, built next to vramshim, with the same arguments.
//
// The exporter serves HTTP with Debian's cpp-httplib, whose compiled part is a shared library that
// brings the shared C++ runtime (libstdc++.so.6) along. Every program here links the C++ runtime
// statically (.bazelrc); a process holding both runtimes has two sets of iostream locale facets,
// and `std::cout << 42` in the CLI then fails (the stream goes bad and prints nothing more). So
// cpp-httplib lives in an executable of its own, which writes no iostreams.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/shim_location.h"

namespace vramshim::cli {

void add_exporter_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "exporter",
      "Serve /metrics for Prometheus: every process running under vramshim on this node (every "
      "user's, for root), asked at scrape time (vramshim exporter --help for its options)");
  // Everything after `exporter`, --help included, is the exporter's.
  command->prefix_command();
  command->set_help_flag();
  command->callback([command] {
    const std::string exporter = directory_of_executable() + "/vramshim-exporter";
    std::vector<std::string> arguments = {"vramshim exporter"};
    for (const std::string& argument : command->remaining()) arguments.push_back(argument);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    ::execv(exporter.c_str(), argv.data());
    throw std::runtime_error("cannot run " + exporter + ": " + std::strerror(errno));
  });
}

}  // namespace vramshim::cli
