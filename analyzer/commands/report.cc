// vramshim report FILE: the top allocation sites of a report, as text, JSON or folded stacks, or a
// call tree; an out-of-memory report's failure first.
#include <iostream>
#include <memory>
#include <sstream>

#include "analyzer/commands/command.h"
#include "analyzer/commands/report_options.h"
#include "analyzer/model/call_tree.h"
#include "analyzer/model/growth.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/call_tree_text.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/growth_text.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/omitted_rows.h"
#include "analyzer/render/out_of_memory_view.h"
#include "analyzer/render/report_json.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/view_json.h"

namespace vramshim::cli {
namespace {

// Call-tree nodes below this share of the total are left out of the tree (unless --top 0).
constexpr double kTreeMinFraction = 0.01;

struct ReportCommand {
  std::string file;
  size_t top = 10;
  bool leaks = false;
  bool peak = false;
  bool allocations = false;
  bool tree = false;
  bool stacks = false;
  bool growth = false;
  std::string format;
  ViewOptions view;

  // The view's name in the JSON document.
  const char* view_name() const {
    return tree ? "tree" : growth ? "growth" : stacks ? "stacks" : "sites";
  }

  void run() const {
    using namespace analyzer;
    const Metric metric = leaks         ? Metric::kLiveBytes
                          : allocations ? Metric::kAllocations
                                        : Metric::kBytesAtPeak;
    const Report report = read_report(file);
    Symbolizer symbolizer;
    const FrameTable table(report, symbolizer, view.hide_patterns());
    std::vector<SiteView> sites = collect_sites(report, table, view.filter());
    TerminalSafeStream out(std::cout);  // the report names what anyone could have chosen
    if (format == "folded") {
      render_folded(out, sites, table, metric);
      return;
    }
    // The table lists one row per label unless it shows stacks (views group by what they show).
    std::vector<SiteView> rows = stacks ? sites : group_by_label(sites);
    sort_sites(rows, table, metric);
    // --top 0 shows every node of the tree, too.
    const double tree_min_fraction = top == 0 ? 0.0 : kTreeMinFraction;
    const bool summary = !leaks && !peak && !allocations;
    if (format == "json") {
      nlohmann::json doc = json_document("report");
      doc["view"] = view_name();
      add_report_header(doc, report, rows);
      doc["out_of_memory"] = out_of_memory_view_json(report, table);
      if (tree) {
        add_call_tree(doc, metric, build_call_tree(sites, table, tree_min_fraction),
                      build_call_tree(sites, table, 0.0));
      } else if (growth) {
        doc["growth"] =
            growth_json(report, table, analyze_growth(report, table, view.filter()), top);
      } else {
        add_ranked_sites(doc, table, rows, metric, top);
        if (summary)
          doc["growth"] =
              growth_json(report, table, analyze_growth(report, table, view.filter()), top);
      }
      write_json_document(std::cout, doc);  // JSON escapes every control itself
      return;
    }
    render_out_of_memory(out, report, table);
    render_header(out, report, rows);
    if (growth) {
      out << '\n';
      render_growth(out, report, table, analyze_growth(report, table, view.filter()), top);
      return;
    }
    if (tree) {
      const CallTree shown = build_call_tree(sites, table, tree_min_fraction);
      out << "\nCall tree by " << metric_title(metric) << " (callers above callees"
          << (top == 0 ? "" : "; nodes under 1% left out") << "):\n\n";
      render_call_tree(out, shown, metric);
      if (top != 0) {
        const size_t omitted = count_nodes(build_call_tree(sites, table, 0.0).root, metric) -
                               count_nodes(shown.root, metric);
        if (omitted > 0) {
          out << '\n' << omitted_rows_line(omitted, "more node", "more nodes") << '\n';
        }
      }
      return;
    }
    if (summary) {
      std::ostringstream section;
      render_growing_summary(section, report, table, analyze_growth(report, table, view.filter()),
                             top, "--top 0 for all");
      if (!section.str().empty()) out << '\n' << section.str();
    }
    render_top_sites(out, report, table, rows, metric, top);
  }
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto command = std::make_shared<ReportCommand>();
  CLI::App* sub =
      app.add_subcommand("report", "Show which code holds GPU memory, from a report file");
  sub->add_option("file", command->file, "Report file (vramshim.PID.json, or a merged report)")
      ->required();
  add_top_option(sub, command->top);
  auto* leaks =
      sub->add_flag("--leaks", command->leaks, "Rank by live bytes when the report was written");
  auto* peak =
      sub->add_flag("--peak", command->peak, "Rank by bytes held at the process's peak (default)");
  auto* allocations =
      sub->add_flag("--allocations", command->allocations, "Rank by number of allocations");
  leaks->excludes(peak)->excludes(allocations);
  peak->excludes(allocations);
  auto* stacks = sub->add_flag("--stacks", command->stacks,
                               "List each site with its whole stack, sites by stack (default: one "
                               "line per site, named by its innermost frame of your code)");
  auto* tree = sub->add_flag("--tree", command->tree,
                             "Show a call tree by function instead of the top sites (nodes "
                             "under 1% left out, and counted; with --top 0, every node)")
                   ->excludes(stacks);
  sub->add_flag("--growth", command->growth, analyzer::kGrowthHelp)->excludes(tree);
  add_format_option(sub, command->format, {"text", "json", "folded"},
                    "folded: one line per stack, for flamegraph.pl and speedscope");
  add_view_options(sub, command->view);
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
