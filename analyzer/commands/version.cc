// vramshim version / vramshim --version: the version, the commit and date of the build, and the
// report format versions this vramshim reads and writes.
#include <ctime>
#include <iostream>
#include <string>

#include "analyzer/commands/build_info.h"
#include "analyzer/commands/command.h"
#include "analyzer/model/report_reader.h"

namespace vramshim::cli {
namespace {

std::string build_date(int64_t seconds) {
  if (seconds <= 0) return "unknown";
  const std::time_t time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

std::string version_text() {
  return std::string("vramshim ") + kBuildInfo.version + "\ncommit:  " + kBuildInfo.commit +
         "\nbuilt:   " + build_date(kBuildInfo.build_time) +
         "\nreports: reads format versions 1 to " + std::to_string(analyzer::kReportVersion) +
         ", writes version " + std::to_string(analyzer::kReportVersion) +
         " (shim/report/FORMAT.md)";
}

}  // namespace

void add_version_command(CLI::App& app) {
  app.set_version_flag("--version", version_text(), "Print the version and exit");
  CLI::App* sub = app.add_subcommand(
      "version", "Print the version, the build's commit and date, and the report format versions");
  sub->callback([] { std::cout << version_text() << '\n'; });
}

}  // namespace vramshim::cli
