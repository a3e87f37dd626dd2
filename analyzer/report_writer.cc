#include "analyzer/report_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

json optional(const std::optional<int64_t>& value) { return value ? json(*value) : json(); }

json devices_json(const std::vector<DeviceFigures>& devices) {
  json list = json::array();
  for (const DeviceFigures& d : devices) {
    list.push_back({{"device", d.device},
                    {"in_use_bytes", d.in_use_bytes},
                    {"cached_bytes", d.cached_bytes},
                    {"reserved_bytes", d.reserved_bytes},
                    {"peak_in_use_bytes", d.peak_in_use_bytes},
                    {"peak_reserved_bytes", d.peak_reserved_bytes},
                    {"driver_alloc_calls", d.driver_alloc_calls},
                    {"driver_free_calls", d.driver_free_calls},
                    {"pool_hits", d.pool_hits},
                    {"pool_misses", d.pool_misses},
                    {"fences_issued", d.fences_issued},
                    {"synchronizations", d.synchronizations},
                    {"released_by_flush_bytes", d.released_by_flush_bytes},
                    {"released_by_oom_bytes", d.released_by_oom_bytes},
                    {"released_by_idle_bytes", d.released_by_idle_bytes},
                    {"limit_bytes", optional(d.limit_bytes)}});
  }
  return list;
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

}  // namespace

json report_to_json(const Report& report) {
  json doc = {{"format", "vramshim-report"},
              {"version", report.version},
              {"reason", report.reason},
              {"sequence", report.sequence},
              {"process", process_json(report.process)}};
  const CaptureConfig& c = report.config;
  doc["config"] = {{"pool", c.pool},
                   {"stacks", c.stacks},
                   {"sample_bytes", c.sample_bytes},
                   {"stack_depth", c.stack_depth},
                   {"limit_bytes", optional(c.limit_bytes)},
                   {"max_cached_bytes", optional(c.max_cached_bytes)}};
  doc["devices"] = devices_json(report.devices);
  doc["peak"] = {{"in_use_bytes", report.peak_in_use_bytes}, {"time", report.peak_time}};
  json modules = json::array();
  for (size_t i = 0; i < report.modules.size(); ++i) {
    const Module& m = report.modules[i];
    modules.push_back({{"id", i}, {"path", m.path}, {"base", m.base}, {"build_id", m.build_id}});
  }
  doc["modules"] = std::move(modules);
  json frames = json::array();
  for (size_t i = 0; i < report.frames.size(); ++i) {
    const Frame& f = report.frames[i];
    const json function = f.function.empty() ? json() : json(f.function);
    if (f.python) {
      frames.push_back({{"id", i},
                        {"python", true},
                        {"file", f.file},
                        {"line", f.line},
                        {"function", function}});
    } else {
      frames.push_back(
          {{"id", i}, {"module", f.module}, {"offset", f.offset}, {"function", function}});
    }
  }
  doc["frames"] = std::move(frames);
  json stacks = json::array();
  for (size_t i = 0; i < report.stacks.size(); ++i) {
    stacks.push_back({{"id", i}, {"frames", report.stacks[i].frames}});
  }
  doc["stacks"] = std::move(stacks);
  json sites = json::array();
  for (const Site& s : report.sites) {
    json site = {{"stack", s.stack},
                 {"kind", s.kind},
                 {"live_bytes", s.live_bytes},
                 {"live_count", s.live_count},
                 {"total_bytes", s.total_bytes},
                 {"total_count", s.total_count},
                 {"peak_bytes", s.peak_bytes},
                 {"bytes_at_peak", s.bytes_at_peak}};
    if (report.merged()) {
      json ranks = json::array();
      for (const RankFigures& r : s.ranks) {
        const ProcessInfo& p = report.merged_from[static_cast<size_t>(r.process)];
        ranks.push_back({{"process", r.process},
                         {"rank", optional(p.rank)},
                         {"pid", p.pid},
                         {"live_bytes", r.live_bytes},
                         {"live_count", r.live_count},
                         {"total_bytes", r.total_bytes},
                         {"total_count", r.total_count},
                         {"peak_bytes", r.peak_bytes},
                         {"bytes_at_peak", r.bytes_at_peak}});
      }
      site["ranks"] = std::move(ranks);
    }
    sites.push_back(std::move(site));
  }
  doc["sites"] = std::move(sites);
  doc["timeline"] = {{"interval_ms", report.timeline_interval_ms},
                     {"samples", samples_json(report.timeline)}};
  if (report.merged()) {
    json merged = json::array();
    for (const ProcessInfo& p : report.merged_from) {
      json entry = process_json(p);
      entry["reason"] = p.reason;
      entry["devices"] = devices_json(p.devices);
      entry["peak_in_use_bytes"] = p.peak_in_use_bytes;
      entry["timeline"] = samples_json(p.timeline);
      merged.push_back(std::move(entry));
    }
    doc["merged_from"] = std::move(merged);
  }
  return doc;
}

void write_report_atomically(const Report& report, const std::string& path) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error(path + ": " + std::strerror(errno));
  const std::string text = report_to_json(report).dump() + "\n";
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw std::runtime_error(path + ": cannot write (" + why + ")");
  }
}

}  // namespace vramshim::analyzer
