// vramshim import torch-snapshot SNAPSHOT -o REPORT: a PyTorch memory snapshot read into a vramshim
// report, for report, --growth, diff, merge and html.
#include <memory>
#include <stdexcept>

#include "analyzer/commands/command.h"
#include "analyzer/files/output_file.h"
#include "analyzer/model/report_writer.h"
#include "analyzer/model/snapshot_file.h"
#include "analyzer/model/torch_snapshot_report.h"

namespace vramshim::cli {
namespace {

struct ImportCommand {
  std::string format;
  std::string file;
  std::string output;

  void run() const {
    using namespace analyzer;
    const PickleValue::Ref snapshot = read_snapshot_pickle(file);
    Report report;
    try {
      report = report_from_torch_snapshot(*snapshot, file);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(file + ": " + e.what());
    }
    write_output(output, [&](std::ostream& out) { write_report(out, report); });
  }
};

}  // namespace

void add_import_command(CLI::App& app) {
  auto command = std::make_shared<ImportCommand>();
  CLI::App* sub = app.add_subcommand(
      "import",
      "Read another tool's memory record into a vramshim report: a PyTorch memory snapshot "
      "(torch.cuda.memory._dump_snapshot), for report, --growth, diff, merge and html");
  sub->add_option("format", command->format,
                  "torch-snapshot: the pickle torch.cuda.memory._dump_snapshot() writes; its "
                  "segments become the report's, its device traces the report's trace, each stack "
                  "of frames a site (docs/exports.md)")
      ->required()
      ->check(CLI::IsMember({"torch-snapshot"}));
  sub->add_option("file", command->file, "Snapshot file")->required();
  add_output_option(sub, command->output, "Report file");
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
