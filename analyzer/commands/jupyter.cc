// vramshim jupyter install: a Jupyter kernelspec whose kernel, a Python with ipykernel, runs under
// the shim. The kernel is the Python process itself, with the shim in LD_PRELOAD and the settings
// as VRAMSHIM_* in the kernelspec's env (what `run` sets): Jupyter's interrupt and restart signal
// it directly, and `vramshim ps` lists it under the pid Jupyter knows.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/path_search.h"
#include "analyzer/commands/shim_location.h"
#include "analyzer/commands/shim_settings.h"
#include "analyzer/commands/trusted_executable.h"
#include "analyzer/files/output_file.h"
#include "analyzer/render/terminal_safe.h"

extern char** environ;

namespace vramshim::cli {
namespace {

struct JupyterOptions {
  std::string action;
  std::string name = "vramshim";
  std::string display_name = "Python 3 (vramshim)";
  std::string python = "python3";
  std::string prefix;
  bool user = false;
  ShimSettings shim;
};

// Jupyter's rule for kernel names (jupyter_client's kernelspec.py).
bool valid_kernel_name(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// `python` as the kernel will run it: a name without a slash is looked up in PATH's absolute
// directories, as the shell does with those; as root, only a program no other user controls, nor
// the way to it (trusted_program_path), is taken there, as `flush --deep` does: root runs it now
// and in every kernel started from the kernelspec. The path is made absolute but not resolved
// through links: a venv's python is a link to the system's, and only started through the link does
// it see the venv's packages.
std::string absolute_program(const std::string& python) {
  if (python.find('/') != std::string::npos) {
    const std::string path = std::filesystem::absolute(python).lexically_normal().string();
    if (!is_executable_file(path)) throw std::runtime_error(python + " is not an executable file");
    return path;
  }
  bool planted_elsewhere = false;  // one found where another user could have put it
  for (const std::string& directory : absolute_path_directories()) {
    const std::string candidate = directory + "/" + python;
    if (!is_executable_file(candidate)) continue;
    if (::geteuid() != 0) return std::filesystem::absolute(candidate).lexically_normal().string();
    if (const std::optional<std::string> trusted = trusted_program_path(candidate)) return *trusted;
    planted_elsewhere = true;
  }
  throw std::runtime_error("no " + python + " on PATH" +
                           (planted_elsewhere ? " that only root controls" : "") +
                           " (name the kernel's Python with --python)");
}

// The kernel is `python -m ipykernel_launcher`: a Python without ipykernel would give a kernelspec
// that never starts, and the notebook would say little about why.
void require_ipykernel(const std::string& python) {
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  // For root, isolated (-I): neither the current directory nor a user's site-packages nor
  // PYTHON* variables take part, so a module planted where root runs this is not imported, as
  // root. A user's own check keeps their site-packages and PYTHONPATH, as their kernel will.
  std::string program = python, flag = "-c", code = "import ipykernel_launcher";
  std::string isolated = "-I";
  std::vector<char*> argv = {program.data()};
  if (::geteuid() == 0) argv.push_back(isolated.data());
  argv.insert(argv.end(), {flag.data(), code.data(), nullptr});
  pid_t child = 0;
  const int error = ::posix_spawn(&child, python.c_str(), &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (error != 0) throw std::runtime_error("cannot run " + python + ": " + std::strerror(error));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(python + " cannot import ipykernel; install it there (" + python +
                             " -m pip install ipykernel) or name another Python with --python");
  }
}

// Where Jupyter looks for kernelspecs: PREFIX/share/jupyter/kernels, or the user's data directory
// as jupyter_core finds it (JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
// ~/.local/share/jupyter).
std::filesystem::path kernels_directory(const JupyterOptions& options) {
  if (!options.prefix.empty()) {
    return std::filesystem::absolute(options.prefix) / "share" / "jupyter" / "kernels";
  }
  auto variable = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  if (!variable("JUPYTER_DATA_DIR").empty()) {
    return std::filesystem::absolute(variable("JUPYTER_DATA_DIR")) / "kernels";
  }
  if (!variable("XDG_DATA_HOME").empty()) {
    return std::filesystem::absolute(variable("XDG_DATA_HOME")) / "jupyter" / "kernels";
  }
  if (variable("HOME").empty()) {
    throw std::runtime_error("HOME is not set: name the kernelspec's place with --prefix");
  }
  return std::filesystem::path(variable("HOME")) / ".local" / "share" / "jupyter" / "kernels";
}

nlohmann::json kernel_spec(const JupyterOptions& options, const std::string& python,
                           const std::string& shim) {
  // The kernelspec's env replaces those variables in the kernel's environment: LD_PRELOAD holds the
  // shim alone (Jupyter leaves a "${LD_PRELOAD}" unexpanded when it is unset).
  nlohmann::json environment = {{"LD_PRELOAD", shim}};
  for (const auto& [name, value] : shim_variables(options.shim)) environment[name] = value;
  return {
      {"argv", {python, "-m", "ipykernel_launcher", "-f", "{connection_file}"}},
      {"display_name", options.display_name},
      {"language", "python"},
      {"env", environment},
  };
}

void install(const JupyterOptions& options) {
  check_shim_settings(options.shim, "jupyter install");
  const std::string shim = find_shim();
  const std::string python = absolute_program(options.python);
  require_ipykernel(python);
  const std::filesystem::path directory = kernels_directory(options) / options.name;
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    throw std::runtime_error("cannot create " + directory.string() + ": " + error.message());
  const std::string path = (directory / "kernel.json").string();
  analyzer::write_output(
      path, [&](std::ostream& out) { out << kernel_spec(options, python, shim).dump(1) << '\n'; });
  std::cout << analyzer::terminal_safe("installed the Jupyter kernel '" + options.name + "' (" +
                                       options.display_name + ") in " + directory.string() + ": " +
                                       python + " under " + shim)
            << '\n';
}

}  // namespace

void add_jupyter_command(CLI::App& app) {
  auto options = std::make_shared<JupyterOptions>();
  CLI::App* command = app.add_subcommand(
      "jupyter", "Install a Jupyter kernel that runs under the shim (vramshim jupyter install)");
  command->add_option("action", options->action, "install: write the kernelspec")
      ->required()
      ->check(CLI::IsMember({"install"}));
  command->add_option("--name", options->name, "The kernel's name (letters, digits, . _ -)")
      ->capture_default_str();
  command->add_option("--display-name", options->display_name, "The name notebooks show")
      ->capture_default_str();
  command
      ->add_option("--python", options->python,
                   "The kernel's Python, with ipykernel (a name on PATH or a path)")
      ->capture_default_str();
  CLI::Option* user = command->add_flag(
      "--user", options->user,
      "Install for this user (the default): $JUPYTER_DATA_DIR, else ~/.local/share/jupyter");
  CLI::Option* prefix =
      command->add_option("--prefix", options->prefix,
                          "Install into PREFIX/share/jupyter/kernels (a venv, a conda env)");
  user->excludes(prefix);
  add_shim_setting_options(command, options->shim);
  command->footer(
      "Writes NAME/kernel.json (an existing one is replaced). Its kernel runs PYTHON -m\n"
      "ipykernel_launcher with LD_PRELOAD set to this vramshim's libvramshim.so and the options\n"
      "above as VRAMSHIM_* variables: vramshim ps, flush [--deep], stats and snapshot reach it,\n"
      "and so do vramshim.flush() and the other Python calls in its cells.\n"
      "Example: vramshim jupyter install --name gpu --limit 20G\n"
      "Exit status:\n"
      "  0  the kernelspec was written\n"
      "  1  no such Python, no ipykernel in it, no shim, or the kernelspec cannot be written\n"
      "     (one line on standard error)\n"
      "  2  a usage error (one line)\n");
  command->callback([options] {
    if (!valid_kernel_name(options->name)) {
      throw UsageError("jupyter: --name " + options->name +
                       " is not a kernel name (letters, digits, '.', '_', '-')");
    }
    install(*options);
  });
}

}  // namespace vramshim::cli
