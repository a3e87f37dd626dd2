// The vramshim command's subcommands: each is defined in its own file and added to the app in
// main.cc.
#pragma once

#include <CLI/CLI.hpp>

namespace vramshim::cli {

// Reading reports and traces (analyzer/): report, diff, merge, html, replay, demo, export.
void add_report_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_html_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_export_command(CLI::App& app);

// Talking to running processes (analyzer/control/): run, ps, flush, stats, snapshot.
void add_run_command(CLI::App& app);
void add_ps_command(CLI::App& app);
void add_flush_command(CLI::App& app);
void add_stats_command(CLI::App& app);
void add_snapshot_command(CLI::App& app);

// Watching the node's processes live (analyzer/live/): exporter (which runs vramshim-exporter),
// top.
void add_exporter_command(CLI::App& app);
void add_top_command(CLI::App& app);
// The options and the action of vramshim-exporter, on its app.
void configure_exporter(CLI::App& command);

}  // namespace vramshim::cli

namespace vramshim::cli {

// A subcommand that fails throws std::runtime_error with a one-line message; main prints
// "vramshim: <message>" and exits 1. A subcommand that must exit with another status (run exits
// with its child's status) throws ExitStatus.
struct ExitStatus {
  int code;
};

// Parses the command line and runs the chosen subcommand with the error handling above; returns the
// process's exit status. Shared by the vramshim binary and the test binaries that carry part of its
// subcommands.
int run_command_line(CLI::App& app, int argc, char** argv);

}  // namespace vramshim::cli
