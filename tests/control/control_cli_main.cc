// The vramshim command with only its process-control subcommands (run, ps, flush, stats, snapshot),
// so their tests do not depend on the report-reading ones.
#include "analyzer/commands/command.h"

int main(int argc, char** argv) {
  CLI::App app{"vramshim (process control only, for tests)"};
  app.require_subcommand(1);
  vramshim::cli::add_run_command(app);
  vramshim::cli::add_ps_command(app);
  vramshim::cli::add_flush_command(app);
  vramshim::cli::add_stats_command(app);
  vramshim::cli::add_snapshot_command(app);
  return vramshim::cli::run_command_line(app, argc, argv);
}
