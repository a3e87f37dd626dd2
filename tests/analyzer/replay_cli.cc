// The replay command of the vramshim CLI on its own, for its tests.
#include "analyzer/commands/command.h"

int main(int argc, char** argv) {
  CLI::App app{"vramshim (replay)"};
  app.require_subcommand(1);
  vramshim::cli::add_replay_command(app);
  return vramshim::cli::run_command_line(app, argc, argv);
}
