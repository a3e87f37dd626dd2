// vramshim merge FILE… -o FILE: one report from the reports of many processes (ranks of a job).
#include <sys/stat.h>

#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/files/output_file.h"
#include "analyzer/model/report_merge.h"
#include "analyzer/model/report_reader.h"
#include "analyzer/model/report_writer.h"
#include "analyzer/model/site_view.h"
#include "analyzer/model/symbolizer.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/units.h"
#include "analyzer/render/view_json.h"

namespace vramshim::cli {
namespace {

// The processes merged so far, by host, pid and start time: a process's exit and out-of-memory
// reports (vramshim.PID.json, vramshim.PID.oom.json: both match vramshim.*.json), a file given
// twice, or an earlier merge among its own inputs would count a process twice.
class MergedProcesses {
 public:
  // The process of `report` (or any of a merged report's) merged already: its file, else "".
  std::string already_merged(const analyzer::Report& report) const {
    for (const analyzer::ProcessInfo& process : processes_of(report)) {
      if (!known(process)) continue;
      if (const auto it = files_.find(identity(process)); it != files_.end()) return it->second;
    }
    return {};
  }
  void add(const analyzer::Report& report, const std::string& file) {
    for (const analyzer::ProcessInfo& process : processes_of(report)) {
      if (known(process)) files_.emplace(identity(process), file);
    }
  }

 private:
  using Identity = std::tuple<std::string, int64_t, double>;
  // An imported snapshot's process is not known (pid 0, and no start time before PyTorch 2.2's
  // time stamps): it is never taken for another's, whose out-of-memory section it would get.
  static bool known(const analyzer::ProcessInfo& process) { return process.pid != 0; }
  static Identity identity(const analyzer::ProcessInfo& process) {
    return {process.host, process.pid, process.start_time};
  }
  static std::vector<analyzer::ProcessInfo> processes_of(const analyzer::Report& report) {
    return report.merged() ? report.merged_from
                           : std::vector<analyzer::ProcessInfo>{report.process};
  }
  std::map<Identity, std::string> files_;
};

struct MergeCommand {
  std::vector<std::string> files;
  std::string output;
  std::string format;
  bool no_trace = false;

  void run() const {
    using namespace analyzer;
    if (format == "json" && is_standard_output(output)) {
      throw UsageError(
          "merge: --format json needs -o FILE: with -o -, standard output holds the "
          "merged report");
    }
    // Warnings wait until the merge succeeds, so that a bad input gets a single line.
    Symbolizer symbolizer(nullptr);
    ReportMerger merger(symbolizer, /*keep_events=*/!no_trace);
    // One input in memory at a time (and, with --no-trace, little of each): a job may have
    // hundreds of ranks.
    MergedProcesses seen;
    std::vector<std::string> skipped;
    // Each file once, also where its process is not known (an imported snapshot's, pid 0).
    std::map<std::pair<dev_t, ino_t>, std::string> files_read;
    for (const std::string& file : files) {
      struct stat status {};
      if (::stat(file.c_str(), &status) == 0) {
        const auto [it, added] = files_read.try_emplace({status.st_dev, status.st_ino}, file);
        if (!added) {
          skipped.push_back("vramshim: " + terminal_safe(file) + ": left out: it is " +
                            terminal_safe(it->second) + ", merged already");
          continue;
        }
      }
      const Report report = read_report(file);
      if (const std::string first = seen.already_merged(report); !first.empty()) {
        // An out-of-memory report sorts after its process's exit report (mem.3.json,
        // mem.3.oom.json): its explanation is kept, which the exit report lacks.
        const bool kept_oom = merger.add_out_of_memory(report);
        skipped.push_back("vramshim: " + terminal_safe(file) + ": left out: its process is " +
                          terminal_safe(first) + "'s, merged already" +
                          (kept_oom ? "; its out-of-memory explanation is kept" : ""));
        continue;
      }
      seen.add(report, file);
      merger.add(report);
    }
    const Report merged = merger.finish();
    write_output(output, [&](std::ostream& out) { write_report(out, merged); });
    for (const std::string& warning : symbolizer.warnings()) {
      std::cerr << analyzer::terminal_safe(warning) << '\n';
    }
    for (const std::string& line : skipped) std::cerr << line << '\n';
    if (format == "json") {
      SiteFigures totals;
      for (const Site& site : merged.sites) totals.add(figures_of(site));
      nlohmann::json doc = json_document("merge");
      doc["output"] = output;
      doc["files"] = files;
      doc["processes"] = processes_json(merged);
      doc["peak_in_use_bytes"] = merged.peak_in_use_bytes;
      doc["site_count"] = merged.sites.size();
      doc["stack_count"] = merged.stacks.size();
      doc["totals"] = figures_json(totals);
      write_json_document(std::cout, doc);
      return;
    }
    // With -o -, standard output holds the report alone.
    (is_standard_output(output) ? std::cerr : std::cout)
        << "merged " << merged.merged_from.size() << " processes into "
        << (is_standard_output(output) ? "standard output" : output) << " ("
        << format_count(static_cast<int64_t>(merged.sites.size())) << " sites, "
        << format_count(static_cast<int64_t>(merged.stacks.size())) << " stacks)\n";
  }
};

}  // namespace

void add_merge_command(CLI::App& app) {
  auto command = std::make_shared<MergeCommand>();
  CLI::App* sub = app.add_subcommand("merge",
                                     "Merge the reports of many processes (the ranks of a job) "
                                     "into one, keeping per-rank figures");
  sub->add_option("files", command->files, "Reports to merge")->required()->expected(1, -1);
  add_output_option(sub, command->output, "Merged report");
  sub->add_flag("--no-trace", command->no_trace,
                "Leave out each process's pool segments and recent events: with them a merged "
                "report is about as large as its inputs together (for a job of hundreds of ranks); "
                "without them it cannot be exported as a PyTorch snapshot");
  add_format_option(sub, command->format, {"text", "json"},
                    "what was merged (the merged report itself is JSON, in FILE)");
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
