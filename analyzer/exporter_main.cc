// vramshim-exporter: `vramshim exporter` runs it (analyzer/commands/exporter_launcher.cc says why
// it is an executable of its own).
#include "analyzer/commands/command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "vramshim exporter: serve /metrics for Prometheus, collected at scrape time from every "
      "process running under vramshim on this node (every user's, for root)"};
  vramshim::cli::configure_exporter(app);
  return vramshim::cli::run_command_line(app, argc, argv);
}
