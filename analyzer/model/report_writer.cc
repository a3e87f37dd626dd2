#include "analyzer/model/report_writer.h"

#include <nlohmann/json.hpp>

#include "analyzer/model/out_of_memory_json.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

json optional(const std::optional<int64_t>& value) { return value ? json(*value) : json(); }

// A device figure's value: a number, or null for an absent optional one.
json figure_json(int64_t value) { return value; }
json figure_json(const std::optional<int64_t>& value) { return optional(value); }

json devices_json(const std::vector<DeviceFigures>& devices) {
  json list = json::array();
  for (const DeviceFigures& d : devices) {
    json device = {{"device", d.device}};
#define VRAMSHIM_DEVICE_FIGURE(name, ...) device[#name] = figure_json(d.name);
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
    list.push_back(std::move(device));
  }
  return list;
}

// Adds the site figures of a site or of one process's share of it to `object`.
template <typename Figures>
void add_site_figures(json& object, const Figures& figures) {
#define VRAMSHIM_SITE_FIGURE(name, ...) object[#name] = figures.name;
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
}

json samples_json(const std::vector<TimelineSample>& samples) {
  json list = json::array();
  for (const TimelineSample& s : samples) list.push_back({s.time, s.in_use_bytes, s.cached_bytes});
  return list;
}

json process_json(const ProcessInfo& p) {
  return {{"pid", p.pid},
          {"cmdline", p.cmdline},
          {"exe", p.exe},
          {"host", p.host},
          {"rank", optional(p.rank)},
          {"start_time", p.start_time},
          {"report_time", p.report_time}};
}

json ending_signal_json(const EndingSignal& e) {
  json object = {{"signal", e.signal}, {"signal_name", e.signal_name}, {"code", e.code}};
  if (e.address) object["address"] = *e.address;
  if (e.sender_pid) object["sender_pid"] = *e.sender_pid;
  object["thread_id"] = optional(e.thread_id);
  return object;
}

json site_json(const Site& s, const Report& report) {
  json site = {{"stack", s.stack}, {"kind", s.kind}};
  add_site_figures(site, s);
  if (report.merged()) {
    json ranks = json::array();
    for (const RankFigures& r : s.ranks) {
      const ProcessInfo& p = report.merged_from[static_cast<size_t>(r.process)];
      json share = {{"process", r.process}, {"rank", optional(p.rank)}, {"pid", p.pid}};
      add_site_figures(share, r);
      ranks.push_back(std::move(share));
    }
    site["ranks"] = std::move(ranks);
  }
  return site;
}

json frame_json(const Frame& f, size_t id) {
  const json function = f.function.empty() ? json() : json(f.function);
  if (f.python || f.symbolized) {
    return {{"id", id},
            {f.python ? "python" : "symbolized", true},
            {"file", f.file},
            {"line", f.line},
            {"function", function}};
  }
  return {{"id", id}, {"module", f.module}, {"offset", f.offset}, {"function", function}};
}

json segments_json(const std::vector<PoolSegment>& segments) {
  json list = json::array();
  for (const PoolSegment& s : segments) {
    json blocks = json::array();
    for (const SegmentBlock& b : s.blocks) {
      const char* state = b.allocated ? "allocated" : b.pending ? "pending" : "free";
      blocks.push_back({b.offset, b.size, state, b.requested, b.stack});
    }
    json segment = {
        {"device", s.device}, {"base", s.base}, {"size", s.size}, {"blocks", std::move(blocks)}};
    if (s.expandable) segment["expandable"] = true;
    list.push_back(std::move(segment));
  }
  return list;
}

json trace_json(const Trace& trace) {
  json events = json::array();
  for (const TraceEvent& e : trace.events) {
    events.push_back({e.time, e.type, e.address != 0 ? json(e.address) : json(), e.size,
                      e.device >= 0 ? json(e.device) : json(),
                      e.stream != 0 ? json(e.stream) : json(), e.stack});
  }
  return {
      {"capacity", trace.capacity}, {"recorded", trace.recorded}, {"events", std::move(events)}};
}

json history_json(const History& h) {
  json sites = json::array();
  for (const SiteHistory& s : h.sites) {
    json points = json::array();
    for (const HistoryPoint& p : s.points) points.push_back({p.slot, p.last, p.max});
    sites.push_back({{"site", s.site}, {"at_peak", s.at_peak}, {"points", std::move(points)}});
  }
  return {{"budget_bytes", h.budget_bytes},
          {"ticks", h.ticks},
          {"ticks_per_slot", h.ticks_per_slot},
          {"untracked_sites", h.untracked_sites},
          {"peak", {{"time", h.peak_time}, {"in_use_bytes", h.peak_bytes}}},
          {"slot_times", h.slot_times},
          {"sites", std::move(sites)}};
}

std::string text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Writes `"name":[...]` with one element per index, each produced by `element(i)`.
template <typename Element>
void write_array(std::ostream& out, const char* name, size_t count, Element element) {
  out << ",\n\"" << name << "\":[";
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out << ',';
    element(i);
  }
  out << ']';
}

}  // namespace

void write_report(std::ostream& out, const Report& report) {
  const CaptureConfig& c = report.config;
  out << "{\"format\":\"vramshim-report\",\"version\":" << report.version
      << ",\"reason\":" << text(report.reason) << ",\"sequence\":" << report.sequence
      << ",\n\"process\":" << text(process_json(report.process)) << ",\n\"config\":"
      << text({{"pool", c.pool},
               {"stacks", c.stacks},
               {"sample_bytes", c.sample_bytes},
               {"stack_depth", c.stack_depth},
               {"limit_bytes", optional(c.limit_bytes)},
               {"max_cached_bytes", optional(c.max_cached_bytes)},
               {"stack_table_bytes", optional(c.stack_table_bytes)},
               {"allocations_past_stack_table", c.allocations_past_stack_table}})
      << ",\n\"devices\":" << text(devices_json(report.devices)) << ",\n\"peak\":"
      << text({{"in_use_bytes", report.peak_in_use_bytes}, {"time", report.peak_time}});
  write_array(out, "modules", report.modules.size(), [&](size_t i) {
    const Module& m = report.modules[i];
    json module = {{"id", i}, {"path", m.path}, {"base", m.base}, {"build_id", m.build_id}};
    if (!m.loaded) module["loaded"] = false;
    if (m.deleted) module["deleted"] = true;
    if (!m.segments.empty()) {
      json& segments = module["segments"] = json::array();
      for (const LoadSegment& s : m.segments) {
        segments.push_back({s.vaddr, s.memsz, s.filesz, s.offset});
      }
    }
    out << text(module);
  });
  write_array(out, "frames", report.frames.size(),
              [&](size_t i) { out << text(frame_json(report.frames[i], i)); });
  write_array(out, "stacks", report.stacks.size(), [&](size_t i) {
    out << "{\"id\":" << i << ",\"frames\":[";
    const auto& frames = report.stacks[i].frames;
    for (size_t f = 0; f < frames.size(); ++f) out << (f > 0 ? "," : "") << frames[f];
    out << "]}";
  });
  write_array(out, "sites", report.sites.size(),
              [&](size_t i) { out << text(site_json(report.sites[i], report)); });
  if (!report.segments.empty()) out << ",\n\"segments\":" << text(segments_json(report.segments));
  if (report.history) out << ",\n\"history\":" << text(history_json(*report.history));
  if (report.trace) out << ",\n\"trace\":" << text(trace_json(*report.trace));
  if (report.oom && !report.merged()) out << ",\n\"oom\":" << text(out_of_memory_json(*report.oom));
  out << ",\n\"timeline\":"
      << text({{"interval_ms", report.timeline_interval_ms},
               {"samples", samples_json(report.timeline)}});
  if (report.merged()) {
    write_array(out, "merged_from", report.merged_from.size(), [&](size_t i) {
      const ProcessInfo& p = report.merged_from[i];
      json entry = process_json(p);
      entry["reason"] = p.reason;
      entry["devices"] = devices_json(p.devices);
      entry["peak_in_use_bytes"] = p.peak_in_use_bytes;
      entry["timeline"] = samples_json(p.timeline);
      if (p.oom) entry["oom"] = out_of_memory_json(*p.oom);
      if (p.crash) entry["crash"] = ending_signal_json(*p.crash);
      if (p.terminated) entry["terminated"] = ending_signal_json(*p.terminated);
      if (!p.segments.empty()) entry["segments"] = segments_json(p.segments);
      if (p.trace) entry["trace"] = trace_json(*p.trace);
      out << text(entry);
    });
  }
  out << "}\n";
}

}  // namespace vramshim::analyzer
