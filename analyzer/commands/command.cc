#include "analyzer/commands/command.h"

#include <cstdio>
#include <exception>

namespace vramshim::cli {

int run_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ExitStatus& status) {
    return status.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramshim: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace vramshim::cli
