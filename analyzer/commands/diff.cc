// vramshim diff OLD NEW: growth per allocation site between two reports.
#include <future>
#include <iostream>
#include <memory>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/site_diff.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/diff_json.h"
#include "analyzer/render/diff_text.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/terminal_safe.h"

namespace vramshim::cli {
namespace {

struct DiffCommand {
  std::string old_file;
  std::string new_file;
  size_t top = 10;
  std::string format;
  ViewOptions view;

  void run() const {
    using namespace analyzer;
    // Parsing dominates on large reports: read both at once.
    auto reading_new = std::async(std::launch::async, [this] { return read_report(new_file); });
    const Report old_report = read_report(old_file);
    const Report new_report = reading_new.get();
    Symbolizer symbolizer;  // shared: the two reports usually name the same binaries
    const FrameTable old_table(old_report, symbolizer, view.hide_patterns());
    const FrameTable new_table(new_report, symbolizer, view.hide_patterns());
    const auto old_sites = collect_sites(old_report, old_table, view.filter());
    const auto new_sites = collect_sites(new_report, new_table, view.filter());
    const auto changes = diff_sites(old_sites, old_table, new_sites, new_table);
    if (format == "json") {
      nlohmann::json doc = json_document("diff");
      add_diff(doc, old_report, old_sites, old_table, new_report, new_sites, new_table, changes,
               top);
      write_json_document(std::cout, doc);
      return;
    }
    TerminalSafeStream out(std::cout);  // the reports name what anyone could have chosen
    render_diff(out, old_report, old_sites, old_table, new_report, new_sites, new_table, changes,
                top);
  }
};

}  // namespace

void add_diff_command(CLI::App& app) {
  auto command = std::make_shared<DiffCommand>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Show what grew between two reports (one process at two moments, or two runs)");
  sub->add_option("old", command->old_file, "The earlier report")->required();
  sub->add_option("new", command->new_file, "The later report")->required();
  add_top_option(sub, command->top);
  add_format_option(sub, command->format);
  add_view_options(sub, command->view);
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
