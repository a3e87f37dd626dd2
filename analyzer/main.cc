// vramshim: launches processes under the shim, talks to running ones, and reads their reports.
#include "analyzer/commands/command.h"

int main(int argc, char** argv) {
  vramshim::cli::raise_open_file_limit();
  CLI::App app{"vramshim: pooled, attributed GPU memory for unmodified CUDA processes"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");

  vramshim::cli::add_run_command(app);
  vramshim::cli::add_ps_command(app);
  vramshim::cli::add_flush_command(app);
  vramshim::cli::add_stats_command(app);
  vramshim::cli::add_snapshot_command(app);
  vramshim::cli::add_jupyter_command(app);
  vramshim::cli::add_exporter_command(app);
  vramshim::cli::add_top_command(app);
  vramshim::cli::add_watch_command(app);
  vramshim::cli::add_report_command(app);
  vramshim::cli::add_diff_command(app);
  vramshim::cli::add_merge_command(app);
  vramshim::cli::add_html_command(app);
  vramshim::cli::add_export_command(app);
  vramshim::cli::add_import_command(app);
  vramshim::cli::add_replay_command(app);
  vramshim::cli::add_demo_command(app);
  vramshim::cli::add_version_command(app);
  return vramshim::cli::run_command_line(app, argc, argv);
}
