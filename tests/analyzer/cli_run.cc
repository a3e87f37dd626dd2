#include "tests/analyzer/cli_run.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace vramshim::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

CliResult run_cli(const std::string& cli, const std::vector<std::string>& args,
                  const std::string& runtime_dir, const std::string& working_directory,
                  const std::string& tmpdir) {
  const std::string out = runtime_dir + "/cli.out";
  const std::string err = runtime_dir + "/cli.err";
  const pid_t child = ::fork();
  if (child == 0) {
    if (!working_directory.empty() && ::chdir(working_directory.c_str()) != 0) _exit(120);
    ::setenv("XDG_RUNTIME_DIR", runtime_dir.c_str(), 1);
    if (!tmpdir.empty()) ::setenv("TMPDIR", tmpdir.c_str(), 1);
    ::dup2(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    std::vector<char*> argv{const_cast<char*>(cli.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(cli.c_str(), argv.data());
    _exit(121);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_file(out),
          read_file(err)};
}

}  // namespace vramshim::testing
