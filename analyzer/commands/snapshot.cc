// vramshim snapshot: has a running process write its report now, to a file of our choosing or to
// standard output.
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/files/output_file.h"
#include "analyzer/files/regular_file.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/terminal_safe.h"

namespace vramshim::cli {
namespace {

struct SnapshotOptions {
  pid_t pid = 0;
  std::string output;
  std::string format;
};

// Writing a report walks every live allocation; allow for a large process.
constexpr int kReportTimeoutMs = 60000;

// A directory of our own (mode 0700) for the report the process writes before we copy it to
// standard output; removed with what is in it when done.
class PrivateDirectory {
 public:
  PrivateDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "vramshim-snapshot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory in " +
                               std::filesystem::temp_directory_path().string() + ": " +
                               std::strerror(errno));
    }
    path_ = pattern;
  }
  ~PrivateDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void copy_to_standard_output(const std::string& path) {
  struct stat info {};
  std::string error;
  const int fd = analyzer::open_regular_file(path, &info, &error);
  if (fd < 0) throw std::runtime_error(path + ": " + error);
  char buffer[1 << 16];
  ssize_t got;
  while ((got = ::read(fd, buffer, sizeof buffer)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 ||
        std::fwrite(buffer, 1, static_cast<size_t>(got), stdout) != static_cast<size_t>(got)) {
      const int code = errno;
      ::close(fd);
      throw std::runtime_error(std::string(got < 0 ? path : "standard output") + ": " +
                               std::strerror(code));
    }
  }
  ::close(fd);
  if (std::fflush(stdout) != 0) {
    throw std::runtime_error(std::string("standard output: ") + std::strerror(errno));
  }
}

// Why the process would read `path`, sent as "report PATH", as another path, or nullptr: it reads
// its request up to the first newline and trims the blanks at both ends.
const char* unsendable(const std::string& path) {
  for (const char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return "it has a control character (a newline, a tab, …)";
    }
  }
  if (!path.empty() && (path.front() == ' ' || path.back() == ' ')) {
    return "it begins or ends with a blank";
  }
  return nullptr;
}

// Quoted with its control characters escaped (\n), as JSON writes it, so that the user sees them.
std::string unsendable_message(const std::string& path, const char* why) {
  return "snapshot: cannot ask for a report at " +
         nlohmann::json(path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         ": " + why;
}

// Has process `pid` write its report at `path` (absolute); throws unless it wrote it there.
void ask_for_report(pid_t pid, const std::string& path) {
  if (const char* why = unsendable(path)) throw std::runtime_error(unsendable_message(path, why));
  const nlohmann::json answer =
      require_ok(ask(socket_for_pid(pid), "report " + path, kReportTimeoutMs), pid);
  const auto named = answer.find("path");
  if (named == answer.end()) return;
  if (!named->is_string()) {
    throw std::runtime_error("pid " + std::to_string(pid) +
                             ": the answer's \"path\" is not a string");
  }
  if (named->get<std::string>() != path) {
    throw std::runtime_error("pid " + std::to_string(pid) + ": the process wrote its report to " +
                             named->get<std::string>() + ", not to " + path);
  }
}

void snapshot_to_standard_output(pid_t pid) {
  const PrivateDirectory directory;
  const std::string path = directory.path() + "/report.json";
  ask_for_report(pid, path);
  copy_to_standard_output(path);
}

// The size of the report the process wrote at `path`.
int64_t report_size(const std::string& path) {
  struct stat info {};
  std::string error;
  const int fd = analyzer::open_regular_file(path, &info, &error);
  if (fd < 0) throw std::runtime_error(path + ": " + error);
  ::close(fd);
  return static_cast<int64_t>(info.st_size);
}

void snapshot(const SnapshotOptions& options) {
  const bool json = options.format == "json";
  if (analyzer::is_standard_output(options.output)) {
    if (json) {
      throw UsageError(
          "snapshot: --format json needs -o FILE: with -o -, standard output holds "
          "the report");
    }
    snapshot_to_standard_output(options.pid);
    return;
  }
  if (const char* why = unsendable(options.output)) {
    throw UsageError(unsendable_message(options.output, why));
  }
  // The process resolves a relative path against its own working directory, not ours.
  const std::string path = std::filesystem::absolute(options.output).lexically_normal().string();
  ask_for_report(options.pid, path);
  if (json) {
    nlohmann::json doc = analyzer::json_document("snapshot");
    doc["pid"] = options.pid;
    doc["path"] = path;
    doc["size_bytes"] = report_size(path);
    analyzer::write_json_document(std::cout, doc);
    return;
  }
  std::printf("wrote %s\n", analyzer::terminal_safe(path).c_str());
}

}  // namespace

void add_snapshot_command(CLI::App& app) {
  auto options = std::make_shared<SnapshotOptions>();
  CLI::App* command = app.add_subcommand(
      "snapshot", "Have a running process write its allocation report to FILE now");
  command->add_option("pid", options->pid, "The process")->required();
  add_output_option(command, options->output, "The report file");
  add_format_option(command, options->format, {"text", "json"},
                    "json says where the report was written and its size");
  command->callback([options] { snapshot(*options); });
}

}  // namespace vramshim::cli
