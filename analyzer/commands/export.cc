// vramshim export FILE --format pprof|torch-snapshot -o OUT: a report (or a merged report) in
// another tool's format.
#include <memory>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/export/pprof_profile.h"
#include "analyzer/export/torch_snapshot_export.h"
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
    if (format == "torch-snapshot" && (!view.module.empty() || !view.function.empty())) {
      // A snapshot's segments hold every block, whatever allocated it: leaving some out would
      // show their memory free.
      throw UsageError(
          "export: --module and --function choose sites of a pprof profile; a torch-snapshot "
          "holds every block of the pool's segments");
    }
    const Report report = read_report(file);
    if (format == "torch-snapshot") require_torch_snapshot_memory(report, file);
    Symbolizer symbolizer;
    const FrameTable table(report, symbolizer, view.hide_patterns());
    const std::string bytes = format == "pprof" ? pprof_profile(report, table, view.filter())
                                                : torch_snapshot(report, table);
    write_output(output, [&](std::ostream& out) {
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    });
  }
};

}  // namespace

void add_export_command(CLI::App& app) {
  auto command = std::make_shared<ExportCommand>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write a report in another tool's format: pprof (go tool pprof, its web UI) or a PyTorch "
      "memory snapshot (pytorch.org/memory_viz, python -m torch.cuda._memory_viz)");
  sub->add_option("file", command->file,
                  "Report file (a merged report gives one profile, or one snapshot with a device "
                  "index per process and device)")
      ->required();
  sub->add_option("--format", command->format,
                  "pprof: a gzipped profile.proto with inuse_space/inuse_objects (live at the "
                  "report, the default), peak_space, alloc_space/alloc_objects; labels kind, pid, "
                  "rank. torch-snapshot: the pickle torch.cuda.memory._dump_snapshot() writes, "
                  "its segments the pool's at the report, its device_traces the report's trace; "
                  "memory outside the pool (stream-ordered, VMM, managed) as segments of their "
                  "own, every block whatever --module and --function say (they are refused "
                  "with it; docs/exports.md)")
      ->required()
      ->check(CLI::IsMember({"pprof", "torch-snapshot"}));
  add_output_option(sub, command->output, "Output file (profile or snapshot pickle)");
  add_view_options(sub, command->view);
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
