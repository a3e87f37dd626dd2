#include "analyzer/render/text_report.h"

#include <algorithm>
#include <csignal>
#include <iterator>
#include <optional>

#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/omitted_rows.h"
#include "analyzer/render/units.h"
#include "shim/support/figures.h"

namespace vramshim::analyzer {
namespace {

// `text` on one line: a newline, return or tab in a command line, a host or a path (which the
// profiled program chose) is shown as \n, \r, \t, so that it cannot add a line of its own to
// a header that reads as the report's.
std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

std::string join_cmdline(const std::vector<std::string>& cmdline) {
  std::string out;
  for (const std::string& arg : cmdline) {
    if (!out.empty()) out += ' ';
    out += one_line(arg);
  }
  return out;
}

// ": python train.py", or nothing when the command line is unknown.
std::string with_cmdline(const std::vector<std::string>& cmdline) {
  return cmdline.empty() ? std::string() : ": " + join_cmdline(cmdline);
}

// What follows a figure of `value`: "3.0 MiB live", "16.0 MiB at peak", "3 allocations".
const char* metric_unit_label(Metric metric, int64_t value) {
  switch (metric) {
    case Metric::kBytesAtPeak:
      return "at peak";
    case Metric::kLiveBytes:
      return "live";
    case Metric::kAllocations:
      return value == 1 ? "allocation" : "allocations";
    case Metric::kTotalBytes:
      return "allocated in total";
  }
  return "";
}

std::string value_text(int64_t value, Metric metric) {
  return metric_is_bytes(metric) ? format_bytes(value) : format_count(value);
}

// The device's figures in the order and with the lines, groups and labels of
// shim/support/device_figures.def: "device 0: in use 1.0 MiB, cached 0 B, …; peak in use …".
void render_device(std::ostream& out, const DeviceFigures& d, const char* indent) {
  using support::kDeviceFigures;
  const std::optional<int64_t> values[] = {
#define VRAMSHIM_DEVICE_FIGURE(name, ...) d.name,
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  };
  int lines = 0;
  for (const support::DeviceFigureInfo& figure : kDeviceFigures) {
    lines = std::max(lines, figure.line);
  }
  for (int line = 1; line <= lines; ++line) {
    out << indent;
    if (line == 1) {
      out << "device " << d.device << ": ";
    } else {
      out << "          ";
    }
    int group = 0;  // of the figure written last on this line; 0: none yet
    for (size_t i = 0; i < std::size(kDeviceFigures); ++i) {
      const support::DeviceFigureInfo& figure = kDeviceFigures[i];
      if (figure.line != line || !values[i]) continue;
      if (group != 0) out << (figure.group == group ? ", " : "; ");
      group = figure.group;
      out << figure.label << ' '
          << (figure.unit == support::FigureUnit::kBytes ? format_bytes(*values[i])
                                                         : format_count(*values[i]));
    }
    out << '\n';
  }
}

// "SEGV_MAPERR", "SI_USER": the name of a signal's si_code, or the number when it has none here.
std::string signal_code_name(int64_t signal, int64_t code) {
  static const char* const kSegv[] = {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR"};
  static const char* const kBus[] = {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
                                     "BUS_MCEERR_AO"};
  static const char* const kFpe[] = {"FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
                                     "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB"};
  static const char* const kIll[] = {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                     "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK"};
  auto pick = [&](const auto& names) -> std::string {
    if (code >= 1 && code <= static_cast<int64_t>(std::size(names))) return names[code - 1];
    return "code " + std::to_string(code);
  };
  switch (code) {
    case 0:
      return "SI_USER";
    case 0x80:
      return "SI_KERNEL";
    case -1:
      return "SI_QUEUE";
    case -6:
      return "SI_TKILL";
    default:
      break;
  }
  if (code < 0) return "code " + std::to_string(code);
  switch (signal) {
    case SIGSEGV:
      return pick(kSegv);
    case SIGBUS:
      return pick(kBus);
    case SIGFPE:
      return pick(kFpe);
    case SIGILL:
      return pick(kIll);
    default:
      return "code " + std::to_string(code);
  }
}

std::string signal_name(const EndingSignal& e) {
  return e.signal_name.empty() ? "signal " + std::to_string(e.signal) : one_line(e.signal_name);
}

// "SIGSEGV (SEGV_MAPERR) at 0x0 on thread 123".
std::string crash_text(const EndingSignal& e) {
  std::string out = signal_name(e) + " (" + signal_code_name(e.signal, e.code) + ")";
  if (e.address) out += " at " + one_line(*e.address);
  if (e.thread_id) out += " on thread " + std::to_string(*e.thread_id);
  return out;
}

// "SIGTERM from pid 456 on thread 123".
std::string termination_text(const EndingSignal& e) {
  std::string out = signal_name(e) + " from ";
  out += e.sender_pid ? "pid " + std::to_string(*e.sender_pid) : std::string("the kernel");
  if (e.thread_id) out += " on thread " + std::to_string(*e.thread_id);
  return out;
}

}  // namespace

std::string describe_ending(const ProcessInfo& p) {
  if (p.crash) return "crashed: " + crash_text(*p.crash);
  if (p.terminated) return "ended by " + termination_text(*p.terminated);
  return {};
}

std::string describe_process(const ProcessInfo& p) {
  std::string out = "pid " + std::to_string(p.pid);
  if (p.rank) out += ", rank " + std::to_string(*p.rank);
  if (!p.host.empty()) out += ", host " + one_line(p.host);
  return out;
}

std::string describe_process(const Report& report) {
  if (!report.merged()) return describe_process(report.process);
  return "merged from " +
         format_count_of(static_cast<int64_t>(report.merged_from.size()), "process", "processes");
}

void render_header(std::ostream& out, const Report& report, const std::vector<SiteView>& sites) {
  const ProcessInfo& p = report.process;
  if (report.merged()) {
    out << "merged:   " << describe_process(report) << '\n';
    for (const ProcessInfo& m : report.merged_from) {
      out << "          " << describe_process(m) << with_cmdline(m.cmdline) << "; peak "
          << format_bytes(m.peak_in_use_bytes);
      // A process that did not end as the others (a crash, a SIGTERM, an out-of-memory report)
      // says how it did.
      if (const std::string ending = describe_ending(m); !ending.empty()) {
        out << "; " << ending;
      } else if (!m.reason.empty() && m.reason != "exit") {
        out << "; written at " << one_line(m.reason);
      }
      out << '\n';
    }
  } else {
    out << "process:  " << describe_process(p) << with_cmdline(p.cmdline) << '\n';
    if (!p.exe.empty()) out << "          exe " << one_line(p.exe) << '\n';
  }
  if (!report.reason.empty()) {
    out << "report:   written at " << report.reason;
    if (p.report_time > 0 && p.start_time > 0) {
      out << ", " << format_seconds(p.seconds_since_start(p.report_time)) << " after start";
    }
    out << '\n';
  }
  if (p.crash) out << "crashed:  " << crash_text(*p.crash) << '\n';
  if (p.terminated) out << "ended:    by " << termination_text(*p.terminated) << '\n';
  const CaptureConfig& c = report.config;
  out << "capture:  pool " << (c.pool ? "on" : "off") << ", stacks " << c.stacks;
  if (c.stacks == "sample")
    out << " (one per " << format_bytes(c.sample_bytes) << ", figures estimated, peaks read high)";
  if (c.stack_depth > 0) out << ", depth " << c.stack_depth;
  if (c.limit_bytes) out << ", limit " << format_bytes(*c.limit_bytes);
  if (c.max_cached_bytes) out << ", max cached " << format_bytes(*c.max_cached_bytes);
  out << '\n';
  if (c.allocations_past_stack_table > 0) {
    out << "          " << c.allocations_past_stack_table
        << " allocations from stacks past VRAMSHIM_STACK_TABLE";
    if (c.stack_table_bytes) out << " (" << format_bytes(*c.stack_table_bytes) << ")";
    out << ": counted under one site, their stacks not kept\n";
  }
  for (const DeviceFigures& d : report.devices) render_device(out, d, "");
  out << "peak:     " << format_bytes(report.peak_in_use_bytes) << " attributed";
  if (report.merged()) {
    out << " (sum of each process's peak)";
  } else if (report.peak_time > 0 && p.start_time > 0) {
    out << ", " << format_seconds(p.seconds_since_start(report.peak_time)) << " after start";
  }
  out << '\n';
  const SiteFigures total = sum_figures(sites);
  out << "sites:    " << format_count_of(static_cast<int64_t>(sites.size()), "site", "sites")
      << "; live " << format_bytes(total.live_bytes) << " in "
      << format_count_of(total.live_count, "allocation", "allocations") << "; total "
      << format_bytes(total.total_bytes) << " in "
      << format_count_of(total.total_count, "allocation", "allocations") << '\n';
}

std::string describe_frame(const DisplayFrame& frame) {
  std::string text = frame.name();
  const std::string location = frame.location();
  if (!location.empty()) text += " (" + location + ")";
  if (frame.inlined) text += " [inlined]";
  return text;
}

size_t ranked_count(const std::vector<SiteView>& sites, Metric metric) {
  return static_cast<size_t>(std::count_if(sites.begin(), sites.end(), [&](const SiteView& site) {
    return site.figures.value(metric) > 0;
  }));
}

size_t rows_shown(size_t ranked, size_t top) { return top == 0 ? ranked : std::min(top, ranked); }

void render_top_sites(std::ostream& out, const Report& report, const FrameTable& table,
                      const std::vector<SiteView>& sites, Metric metric, size_t top) {
  const size_t ranked = ranked_count(sites, metric);
  const size_t shown = rows_shown(ranked, top);
  out << "\nTop " << shown << " of "
      << format_count_of(static_cast<int64_t>(ranked), "site", "sites") << " by "
      << metric_title(metric);
  if (ranked < sites.size()) {
    out << " (" << format_count_of(static_cast<int64_t>(sites.size() - ranked), "site", "sites")
        << " with " << value_text(0, metric) << ' ' << metric_unit_label(metric, 0)
        << " not listed)";
  }
  out << ":\n";
  StackLister lister(table, kTextStackBytes, kTextStackFrames);
  for (size_t i = 0; i < shown; ++i) {
    const SiteView& site = sites[i];
    const SiteFigures& f = site.figures;
    out << "\n#" << (i + 1) << "  " << value_text(f.value(metric), metric) << ' '
        << metric_unit_label(metric, f.value(metric)) << "  [" << site.kind << "]\n"
        << "    live " << format_bytes(f.live_bytes) << " in "
        << format_count_of(f.live_count, "allocation", "allocations") << "; total "
        << format_bytes(f.total_bytes) << " in "
        << format_count_of(f.total_count, "allocation", "allocations") << "; at peak "
        << format_bytes(f.bytes_at_peak) << "; site's own peak " << format_bytes(f.peak_bytes)
        << '\n';
    if (!site.ranks.empty()) {
      out << "    per process:";
      for (size_t r = 0; r < site.ranks.size(); ++r) {
        const ProcessInfo& p = report.merged_from[static_cast<size_t>(site.ranks[r].process)];
        out << (r == 0 ? " " : ", ")
            << (p.rank ? "rank " + std::to_string(*p.rank) : "pid " + std::to_string(p.pid)) << ' '
            << value_text(site.ranks[r].figures.value(metric), metric);
      }
      out << '\n';
    }
    if (site.frames.empty()) out << "    " << no_stack_line(report) << '\n';
    for (const std::string& line : lister.lines(site.frames)) out << "    " << line << '\n';
    if (site.stacks.size() > 1) {
      out << "    from " << format_count(static_cast<int64_t>(site.stacks.size()))
          << " stacks (--stacks shows each)\n";
    }
  }
  if (shown < ranked) {
    out << '\n' << omitted_rows_line(ranked - shown, "more site", "more sites") << '\n';
  }
}

}  // namespace vramshim::analyzer
