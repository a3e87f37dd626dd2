// The report-reading half of the vramshim CLI on its own, so that its tests and measurements do not
// depend on the process-control half.
#include "analyzer/commands/command.h"

int main(int argc, char** argv) {
  CLI::App app{"vramshim (report-reading commands)"};
  app.require_subcommand(1);
  vramshim::cli::add_report_command(app);
  vramshim::cli::add_diff_command(app);
  vramshim::cli::add_merge_command(app);
  vramshim::cli::add_html_command(app);
  vramshim::cli::add_export_command(app);
  vramshim::cli::add_import_command(app);
  return vramshim::cli::run_command_line(app, argc, argv);
}
