// The vramshim command's subcommands: each is defined in its own file and added to the app in
// main.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace vramshim::cli {

// Reading reports and traces (analyzer/): report, diff, merge, html, replay, demo, export, import.
void add_report_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_html_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_import_command(CLI::App& app);

// Talking to running processes (analyzer/control/): run, ps, flush, stats, snapshot.
void add_run_command(CLI::App& app);
void add_ps_command(CLI::App& app);
void add_flush_command(CLI::App& app);
void add_stats_command(CLI::App& app);
void add_snapshot_command(CLI::App& app);
// A Jupyter kernelspec whose kernel runs under the shim: jupyter install.
void add_jupyter_command(CLI::App& app);

// Watching processes live (analyzer/live/): exporter, top, watch.
void add_exporter_command(CLI::App& app);
void add_top_command(CLI::App& app);
void add_watch_command(CLI::App& app);
// About the program (//analyzer/commands:version): version, and --version on `app`.
void add_version_command(CLI::App& app);

}  // namespace vramshim::cli

namespace vramshim::cli {

// A subcommand that fails throws std::runtime_error with a one-line message; main prints
// "vramshim: <message>" and exits 1. One whose arguments are wrong in a way the parser cannot see
// throws UsageError (exit status 2, like the parser's own errors). A subcommand that must exit with
// another status (run exits with its child's status) throws ExitStatus.
struct ExitStatus {
  int code;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The conventions every subcommand gets, added once all are registered: `vramshim help [SUB]`,
// `vramshim completion`, the man page, the
// exit statuses in each one's help (unless its footer documents its own, "Exit status: ..."), and
// in run_command_line one line "vramshim: ..." for every error, usage errors naming the valid
// subcommands or options. Called by run_command_line.
void prepare_command_line(CLI::App& app);

// `vramshim completion bash|zsh` and the unlisted `vramshim man-page` (//analyzer:man_page), made
// from the registered subcommands' help text (documentation.cc). Added by prepare_command_line.
void add_documentation_commands(CLI::App& app);

// Adds -o/--output FILE to `sub`, required: "FILE to write (an existing one is replaced); - for
// standard output", `what` naming the file. Every command that writes an output takes it so.
CLI::Option* add_output_option(CLI::App* sub, std::string& output, const std::string& what);

// Adds --format to `sub`: one of `formats` (the first the default), "json" documented in
// docs/cli-json.md. `detail` says what the formats other than text and json are.
CLI::Option* add_format_option(CLI::App* sub, std::string& format,
                               const std::vector<std::string>& formats = {"text", "json"},
                               const std::string& detail = {});

// Makes `sub` take the command line of another program (run): its own options end at the first word
// that is not one of them (or at "--"), and the words from there on are put into `command`
// unparsed, options of that program included.
void takes_command_line(CLI::App* sub, std::vector<std::string>& command);

// Parses the command line and runs the chosen subcommand with the conventions above; returns the
// process's exit status: 0, 1 for a runtime error, 2 for a usage error, or a subcommand's
// ExitStatus; 1, with one line "vramshim: standard output: <why>", when a subcommand that succeeded
// could not write all its output (a full disk; not a reader that closed its pipe). Shared by the
// vramshim binary and the test binaries that carry part of its subcommands.
int run_command_line(CLI::App& app, int argc, char** argv);

// Raises the soft limit on open files to the hard one (main calls it first): a report's modules
// are read with a descriptor each while they are symbolized, and a process of a thousand shared
// libraries (a PyTorch run) passes the usual soft limit of 1,024, which left the output unwritable.
void raise_open_file_limit();

// Gives a program the CLI starts (run's command) the soft limit the CLI was given; async-signal-
// safe, for a forked child before its exec.
void restore_open_file_limit();

}  // namespace vramshim::cli
