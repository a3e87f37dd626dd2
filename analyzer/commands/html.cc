// vramshim html FILE -o OUT.html: a self-contained page with a flame graph, timeline and top sites.
#include <memory>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/files/output_file.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/html_page.h"

namespace vramshim::cli {

void write_html(const std::string& report_path, const std::string& output,
                const ViewOptions& view) {
  using namespace analyzer;
  const Report report = read_report(report_path);
  Symbolizer symbolizer;
  const FrameTable table(report, symbolizer, view.hide_patterns());
  const auto sites = collect_sites(report, table, view.filter());
  write_output(output, [&](std::ostream& out) { render_html(out, report, table, sites); });
}

namespace {

struct HtmlCommand {
  std::string file;
  std::string output;
  ViewOptions view;

  void run() const { write_html(file, output, view); }
};

}  // namespace

void add_html_command(CLI::App& app) {
  auto command = std::make_shared<HtmlCommand>();
  CLI::App* sub = app.add_subcommand(
      "html", "Write one self-contained HTML page: flame graph, memory timeline, top sites");
  sub->add_option("file", command->file, "Report file")->required();
  add_output_option(sub, command->output, "HTML file");
  add_view_options(sub, command->view);
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
