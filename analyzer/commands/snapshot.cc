// vramshim snapshot: has a running process write its report now, to a file of our choosing.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"

namespace vramshim::cli {
namespace {

struct SnapshotOptions {
  pid_t pid = 0;
  std::string output;
};

// Writing a report walks every live allocation; allow for a large process.
constexpr int kReportTimeoutMs = 60000;

void snapshot(const SnapshotOptions& options) {
  // The process resolves a relative path against its own working directory, not ours.
  const std::string path = std::filesystem::absolute(options.output).lexically_normal().string();
  const nlohmann::json answer =
      require_ok(ask(socket_for_pid(options.pid), "report " + path, kReportTimeoutMs), options.pid);
  std::printf("wrote %s\n", answer.value("path", path).c_str());
}

}  // namespace

void add_snapshot_command(CLI::App& app) {
  auto options = std::make_shared<SnapshotOptions>();
  CLI::App* command = app.add_subcommand(
      "snapshot", "Have a running process write its allocation report to FILE now");
  command->add_option("pid", options->pid, "The process")->required();
  command->add_option("-o,--output", options->output, "The report file to write")->required();
  command->callback([options] { snapshot(*options); });
}

}  // namespace vramshim::cli
