// The report-reading half of the vramshim CLI on its own, so that its tests and measurements do not
// depend on the process-control half. Same error handling as analyzer/main.cc.
#include <cstdio>
#include <exception>

#include "analyzer/command.h"

int main(int argc, char** argv) {
  CLI::App app{"vramshim (report-reading commands)"};
  app.require_subcommand(1);
  vramshim::cli::add_report_command(app);
  vramshim::cli::add_diff_command(app);
  vramshim::cli::add_merge_command(app);
  vramshim::cli::add_html_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const vramshim::cli::ExitStatus& status) {
    return status.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramshim: %s\n", e.what());
    return 1;
  }
  return 0;
}
