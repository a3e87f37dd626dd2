#include "analyzer/render/view_json.h"

#include <optional>

#include "shim/support/figures.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

json text_or_null(const std::string& text) { return text.empty() ? json() : json(text); }

json optional_json(const std::optional<int64_t>& value) { return value ? json(*value) : json(); }

// Seconds from the process's start to `time` (Unix seconds), or null when either is unknown.
json seconds_after(const ProcessInfo& process, double time) {
  return process.start_time > 0 && time > 0 ? json(process.seconds_since_start(time)) : json();
}

// A report's "crash" or "terminated" object (FORMAT.md), or null.
json ending_signal_json(const std::optional<EndingSignal>& e) {
  if (!e) return json();
  return {{"signal", e->signal},
          {"signal_name", text_or_null(e->signal_name)},
          {"code", e->code},
          {"address", e->address ? json(*e->address) : json()},
          {"sender_pid", optional_json(e->sender_pid)},
          {"thread_id", optional_json(e->thread_id)}};
}

// `reason`: why its report was written.
json process_json(const ProcessInfo& p, int64_t peak_in_use_bytes, const std::string& reason) {
  return {{"pid", p.pid},
          {"rank", optional_json(p.rank)},
          {"host", text_or_null(p.host)},
          {"cmdline", p.cmdline},
          {"exe", text_or_null(p.exe)},
          {"start_time", p.start_time > 0 ? json(p.start_time) : json()},
          {"report_time", p.report_time > 0 ? json(p.report_time) : json()},
          {"peak_in_use_bytes", peak_in_use_bytes},
          {"reason", text_or_null(reason)},
          {"crash", ending_signal_json(p.crash)},
          {"terminated", ending_signal_json(p.terminated)}};
}

json device_json(const DeviceFigures& d) {
  json object = {{"device", d.device}};
#define VRAMSHIM_DEVICE_FIGURE(name, ...) object[#name] = optional_json(d.name);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
  return object;
}

json capture_json(const CaptureConfig& c) {
  return {{"pool", c.pool},
          {"stacks", c.stacks},
          {"sample_bytes", c.sample_bytes},
          {"stack_depth", c.stack_depth},
          {"limit_bytes", optional_json(c.limit_bytes)},
          {"max_cached_bytes", optional_json(c.max_cached_bytes)}};
}

}  // namespace

json frame_json(const DisplayFrame& frame) {
  return {{"function", text_or_null(frame.function)},
          {"file", text_or_null(frame.file)},
          {"line", frame.line > 0 ? json(frame.line) : json()},
          {"library", frame.python ? json() : text_or_null(frame.module)},
          {"offset", frame.python ? json() : json(frame.offset)},
          {"inlined", frame.inlined},
          {"kind", frame.python ? "python" : "native"}};
}

json stack_json(const FrameTable& table, const std::vector<uint32_t>& frames) {
  json list = json::array();
  for (uint32_t id : frames) list.push_back(frame_json(table.frame(id)));
  return list;
}

json figures_json(const SiteFigures& f) {
  json object = json::object();
#define VRAMSHIM_SITE_FIGURE(name, ...) object[#name] = f.name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
  return object;
}

json site_json(const FrameTable& table, const SiteView& site, StackLister& lister) {
  json entry = figures_json(site.figures);
  entry["kind"] = site.kind;
  entry["label"] = site.label == kNoFrame ? json() : frame_json(table.frame(site.label));
  size_t omitted = 0;
  entry["frames"] = lister.objects(site.frames, omitted);
  entry["omitted_frames"] = omitted;
  entry["stack_count"] = site.stacks.empty() ? 1 : site.stacks.size();
  if (!site.ranks.empty()) {
    json ranks = json::array();
    for (const RankShare& r : site.ranks) {
      json share = figures_json(r.figures);
      share["process"] = r.process;
      ranks.push_back(std::move(share));
    }
    entry["ranks"] = std::move(ranks);
  }
  return entry;
}

json processes_json(const Report& report) {
  json list = json::array();
  if (!report.merged()) {
    list.push_back(process_json(report.process, report.peak_in_use_bytes, report.reason));
    return list;
  }
  for (const ProcessInfo& p : report.merged_from)
    list.push_back(process_json(p, p.peak_in_use_bytes, p.reason));
  return list;
}

void add_report_header(json& document, const Report& report, const std::vector<SiteView>& sites) {
  const ProcessInfo& p = report.process;
  json devices = json::array();
  for (const DeviceFigures& d : report.devices) devices.push_back(device_json(d));
  document["file"] = report.source;
  document["format_version"] = report.version;
  document["reason"] = text_or_null(report.reason);
  document["merged"] = report.merged();
  document["processes"] = processes_json(report);
  document["capture"] = capture_json(report.config);
  document["devices"] = std::move(devices);
  document["peak_in_use_bytes"] = report.peak_in_use_bytes;
  document["peak_seconds_after_start"] =
      report.merged() ? json() : seconds_after(p, report.peak_time);
  document["report_seconds_after_start"] =
      report.merged() ? json() : seconds_after(p, p.report_time);
  document["site_count"] = sites.size();
  document["totals"] = figures_json(sum_figures(sites));
}

}  // namespace vramshim::analyzer
