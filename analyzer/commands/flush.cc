// vramshim flush: empties the pools of running processes and says how much each released. With
// --deep, the Python frameworks in them (PyTorch, CuPy) empty their own caches first; in a Python
// 3.14+ process started without the shim, through sys.remote_exec (remote_deep_flush.h).
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/remote_deep_flush.h"
#include "analyzer/control/control_client.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

struct FlushOptions {
  std::vector<pid_t> pids;
  bool all = false;
  bool deep = false;
  std::string directory;
};

// A flush waits for the GPU work in flight; give it time.
constexpr int kFlushTimeoutMs = 60000;

// The deep flush's steps, one line each. Frameworks that could not be flushed (no Python in the
// process, a capture running, the GIL not taken in time) are said so; the pool is flushed anyway.
void print_frameworks(pid_t pid, const nlohmann::json& answer) {
  if (answer.contains("frameworks_error")) {
    std::printf("%d: frameworks not flushed: %s\n", pid,
                answer["frameworks_error"].get<std::string>().c_str());
    return;
  }
  for (const nlohmann::json& step : answer.value("frameworks", nlohmann::json::array())) {
    const std::string outcome = step.value("outcome", "");
    const std::string detail = step.value("detail", "");
    std::printf("%d: %s %s", pid, step.value("step", "").c_str(), outcome.c_str());
    if (outcome == "ran") {
      std::printf(", released %s", analyzer::format_bytes(static_cast<int64_t>(step.value(
                                                              "released_bytes", std::uint64_t{0})))
                                       .c_str());
    }
    if (detail.empty()) {
      std::printf("\n");
    } else {
      std::printf(" (%s)\n", detail.c_str());
    }
  }
}

// --deep on a process with no shim socket: its frameworks through sys.remote_exec. Returns whether
// they were reached; if not, one line says why on stderr, after why there is no socket.
bool flush_without_shim(pid_t pid, const std::string& no_socket) {
  try {
    const RemoteFlushResult result = remote_deep_flush(pid);
    std::printf(
        "%d: not under the shim, so no pool to flush; its frameworks asked through "
        "sys.remote_exec (%s)\n",
        pid, result.python.c_str());
    print_frameworks(pid, {{"frameworks", result.frameworks}});
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramshim: %s; %s\n", no_socket.c_str(), e.what());
    return false;
  }
}

void flush(const FlushOptions& options) {
  if (options.all == !options.pids.empty()) throw std::runtime_error("flush needs PID… or --all");
  std::vector<SocketEntry> targets;
  int failures = 0;
  if (options.all) {
    targets = live_sockets(socket_directories(options.directory));
    if (targets.empty()) {
      std::fprintf(stderr, "vramshim: no process of this user runs under vramshim\n");
      return;
    }
  } else {
    // Every process that can be flushed is, whatever becomes of the others.
    for (pid_t pid : options.pids) {
      try {
        targets.push_back(socket_for_pid(pid));
      } catch (const std::exception& e) {
        if (options.deep) {
          failures += flush_without_shim(pid, e.what()) ? 0 : 1;
        } else {
          std::fprintf(stderr, "vramshim: %s\n", e.what());
          ++failures;
        }
      }
    }
  }

  // All at once, so one slow process does not hold up the others.
  const std::string request = options.deep ? "flush deep" : "flush";
  std::vector<std::future<nlohmann::json>> answers;
  for (const SocketEntry& target : targets) {
    answers.push_back(std::async(std::launch::async, [target, request] {
      return require_ok(ask(target, request, kFlushTimeoutMs), target.pid);
    }));
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    try {
      const nlohmann::json answer = answers[i].get();
      print_frameworks(targets[i].pid, answer);
      const std::uint64_t released = answer.value("released_bytes", std::uint64_t{0});
      std::printf("%d: released %s (%llu bytes)\n", targets[i].pid,
                  analyzer::format_bytes(static_cast<int64_t>(released)).c_str(),
                  static_cast<unsigned long long>(released));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vramshim: %s\n", e.what());
      ++failures;
    }
  }
  std::fflush(stdout);
  if (failures > 0) throw ExitStatus{1};
}

}  // namespace

void add_flush_command(CLI::App& app) {
  auto options = std::make_shared<FlushOptions>();
  CLI::App* command = app.add_subcommand(
      "flush", "Release the cached GPU memory of running processes back to the driver");
  command->add_option("pid", options->pids, "Processes to flush");
  command->add_flag("--all", options->all,
                    "Flush every process of this user that runs under vramshim");
  command->add_flag("--deep", options->deep,
                    "First ask PyTorch and CuPy in the process to empty their own caches");
  command->add_option("--dir", options->directory,
                      "With --all: look only in this socket directory");
  command->footer(
      "Exit status:\n"
      "  0  every process asked had its pool flushed (with --deep, each step's outcome is\n"
      "     printed, also when a process runs no Python); with --deep, a Python 3.14+ process\n"
      "     started without the shim had its frameworks' release run (sys.remote_exec, by its\n"
      "     own interpreter or python3.14+ on PATH; it has no pool to flush)\n"
      "  1  a process could not be found, trusted or flushed (the others are flushed all the\n"
      "     same; one line each on standard error), or, with --deep and no shim in it, its\n"
      "     frameworks could not be reached: no Python, Python older than 3.14, no 3.14+\n"
      "     interpreter found, no permission (another user, ptrace_scope), remote debugging\n"
      "     disabled in it\n"
      "  2  a usage error (one line)\n");
  command->callback([options] { flush(*options); });
}

}  // namespace vramshim::cli
