// vramshim demo: runs a bundled training-like workload under the shim — on the GPU when the machine
// has one, else on the simulated driver — flushes its pool through the control socket midway, and
// ends with the report's summary and an HTML page.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/commands/shim_location.h"
#include "analyzer/commands/trusted_executable.h"
#include "analyzer/control/control_client.h"
#include "analyzer/render/report_summary.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/units.h"

extern char** environ;

namespace vramshim::cli {
namespace {

// Whether a real driver with at least one device is installed (checked in this process, which does
// not run under the shim).
bool machine_has_gpu() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return false;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  const bool found =
      init != nullptr && count != nullptr && init(0) == 0 && count(&devices) == 0 && devices > 0;
  dlclose(driver);
  return found;
}

// The demo's workload and the simulated driver are built with the CLI in the source tree; a
// release or a wheel has neither.
constexpr char kFromSource[] =
    " (the demo runs from a build of the source tree: bazel run //analyzer:vramshim -- demo; "
    "an installed vramshim has no demo)";

std::string existing_file(const std::string& path, const char* what) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    throw std::runtime_error(std::string("cannot find the ") + what + " at " + path);
  }
  return resolved;
}

std::string built_file(const std::string& path, const char* what) {
  try {
    return existing_file(path, what);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(error.what() + std::string(kFromSource));
  }
}

std::string directory_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

struct Workload {
  pid_t pid = -1;
  FILE* output = nullptr;  // its stdout
  int input = -1;          // its stdin
};

Workload start_workload(const std::string& program, const std::vector<std::string>& environment) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> env = environment;
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string program_copy = program;
  char* argv[] = {program_copy.data(), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::execve(argv[0], argv, envp.data());
    std::fprintf(stderr, "vramshim: cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  return {pid, ::fdopen(from_child[0], "r"), to_child[1]};
}

struct DemoCommand {
  std::string output_dir;

  void run() const {
    // Paths from the environment, and the report's names, reach the terminal made safe.
    analyzer::TerminalSafeStream out(std::cout);
    const std::string here = directory_of_executable();
    const std::string shim = find_shim();
    // As root, the workload and the simulated driver run as root too: only files no other user
    // controls (trusted_as_root), as the shim.
    const std::string program = trusted_as_root(
        built_file(here + "/demo/demo_workload", "demo workload"), /*executable=*/true);
    const bool gpu = machine_has_gpu();

    std::string dir = output_dir;
    if (dir.empty()) {
      const char* invoked_from = std::getenv("BUILD_WORKING_DIRECTORY");  // set by `bazel run`
      dir = std::string(invoked_from != nullptr ? invoked_from : ".") + "/vramshim-demo";
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error(dir + ": " + std::strerror(errno));
    }
    // One that was there already must be ours, and not a link: the demo writes its report there
    // and reads it back, and another user's directory would let them change it in between.
    struct stat info;
    if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
        ((info.st_mode & 022) != 0 && (info.st_mode & S_ISVTX) == 0)) {
      throw std::runtime_error(dir + " is not a directory of this user's that only they can write");
    }
    dir = existing_file(dir, "output directory");

    std::vector<std::string> environment;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string variable = *entry;
      if (variable.rfind("VRAMSHIM_", 0) == 0 || variable.rfind("LD_PRELOAD=", 0) == 0) continue;
      if (!gpu && variable.rfind("LD_LIBRARY_PATH=", 0) == 0) continue;
      environment.push_back(variable);
    }
    environment.push_back("LD_PRELOAD=" + shim);
    environment.push_back("VRAMSHIM_REPORT=" + dir + "/demo.%p.json");
    if (gpu) {
      out << "vramshim demo: running on this machine's GPU\n";
    } else {
      const std::string fake =
          trusted_as_root(built_file(here + "/../tests/fakecuda/libcuda.so.1", "simulated driver"),
                          /*executable=*/false);
      environment.push_back("LD_LIBRARY_PATH=" + directory_of(fake));
      out << "vramshim demo: no GPU here; running on the simulated driver " << fake << "\n";
    }
    out << "  workload: " << program << "\n  shim:     " << shim << "\n" << std::flush;

    Workload workload = start_workload(program, environment);
    char line[256];
    while (std::fgets(line, sizeof line, workload.output) != nullptr) {
      out << "  | " << line << std::flush;
      if (std::strncmp(line, "midway", 6) == 0) {
        flush_midway(workload.pid);
        if (::write(workload.input, "\n", 1) != 1) break;
      }
    }
    std::fclose(workload.output);
    ::close(workload.input);
    int status = 0;
    ::waitpid(workload.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("the demo workload failed (status " + std::to_string(status) + ")");
    }

    const std::string report = dir + "/demo." + std::to_string(workload.pid) + ".json";
    out << "\n";
    analyzer::render_summary(out, report, 3);
    const std::string html = dir + "/demo.html";
    write_html(report, html, ViewOptions{});
    out << "\nreport:    " << report << "\nHTML page: " << html << "\nnext:      vramshim report "
        << report << " --tree\n";
  }

  static void flush_midway(pid_t pid) {
    const nlohmann::json answer = require_ok(ask(socket_for_pid(pid), "flush"), pid);
    // Any other type is a shim from another build answering; the demo goes on.
    const auto field = answer.find("released_bytes");
    const uint64_t released =
        field != answer.end() && field->is_number_unsigned() ? field->get<uint64_t>() : 0;
    std::cout << "  >> vramshim flush " << pid << ": released "
              << analyzer::format_bytes(static_cast<int64_t>(released))
              << " of cached memory back to the driver\n"
              << std::flush;
  }
};

}  // namespace

void add_demo_command(CLI::App& app) {
  auto command = std::make_shared<DemoCommand>();
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Run the source tree's demo workload under the shim (GPU or simulated driver), flush it "
      "midway, and show its report (a build of the source tree only)");
  sub->add_option("-o,--output-dir", command->output_dir,
                  "Where the report and HTML page go (default: ./vramshim-demo)");
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
