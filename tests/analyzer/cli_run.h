// The control CLI (tests/control/control_cli) run as a user would, in a child process, for the
// tests that answer it through stand-ins for processes under the shim.
#pragma once

#include <string>
#include <vector>

namespace vramshim::testing {

struct CliResult {
  int code;  // the exit status, or 128 + the signal that ended it
  std::string out;
  std::string err;
};

// Runs `cli` with `args`, XDG_RUNTIME_DIR set to `runtime_dir` (where the CLI looks for sockets,
// in runtime_dir/vramshim), the working directory `working_directory` when not empty and TMPDIR
// `tmpdir` when not empty. Its output goes through files in runtime_dir.
CliResult run_cli(const std::string& cli, const std::vector<std::string>& args,
                  const std::string& runtime_dir, const std::string& working_directory = {},
                  const std::string& tmpdir = {});

}  // namespace vramshim::testing
