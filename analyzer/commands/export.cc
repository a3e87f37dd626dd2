// vramshim export FILE --format pprof -o OUT: a report (or a merged report) in another tool's
// format.
#include <memory>
#include <stdexcept>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/export/pprof_profile.h"
#include "analyzer/files/output_file.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/symbolizer.h"

namespace vramshim::cli {
namespace {

struct ExportCommand {
  std::string file;
  std::string format;
  std::string output;
  ViewOptions view;

  void run() const {
    using namespace analyzer;
    const Report report = read_report(file);
    Symbolizer symbolizer;
    const FrameTable table(report, symbolizer, view.hide_patterns());
    const std::string profile = pprof_profile(report, table);
    write_output(output, [&](std::ostream& out) {
      out.write(profile.data(), static_cast<std::streamsize>(profile.size()));
    });
  }
};

}  // namespace

void add_export_command(CLI::App& app) {
  auto command = std::make_shared<ExportCommand>();
  CLI::App* sub = app.add_subcommand(
      "export", "Write a report in another tool's format: pprof (go tool pprof, its web UI)");
  sub->add_option("file", command->file, "Report file (a merged report gives one profile)")
      ->required();
  sub->add_option("--format", command->format,
                  "pprof: a gzipped profile.proto with inuse_space/inuse_objects (live at the "
                  "report, the default), peak_space, alloc_space/alloc_objects; labels kind, pid, "
                  "rank")
      ->required()
      ->check(CLI::IsMember({"pprof"}));
  add_output_option(sub, command->output, "Profile file");
  add_view_options(sub, command->view);
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
