// vramshim html FILE -o OUT.html: a self-contained page with a flame graph, the memory timeline,
// the top and the growing sites, every site's live bytes over time and the trace's allocations.
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
  write_output(output,
               [&](std::ostream& out) { render_html(out, report, table, sites, view.filter()); });
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
      "html",
      "Write one self-contained HTML page: flame graph, memory timeline, top sites, growing sites, "
      "the top sites' live bytes over time, the trace's allocations as bands over their lifetimes");
  sub->add_option("file", command->file, "Report file")->required();
  add_output_option(sub, command->output, "HTML file");
  add_view_options(sub, command->view);
  sub->footer(
      "The page needs no network. It opens on the view that explains the report: the growing "
      "sites when a site grows steadily (as report --growth says), else the live bytes when the "
      "report was written at exit with memory held, else the peak; #view=growing|live|peak in "
      "the address chooses. Of the trace's allocations the 1,000 largest are drawn as bands, the "
      "others summed in one band; the sites over time show the 12 that held the most and one "
      "band for all others.");
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
