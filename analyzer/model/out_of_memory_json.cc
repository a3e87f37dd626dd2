#include "analyzer/model/out_of_memory_json.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

json optional(const std::optional<int64_t>& value) { return value ? json(*value) : json(); }

json segment_json(const PoolSegment& segment) {
  json blocks = json::array();
  for (const SegmentBlock& b : segment.blocks) {
    if (b.allocated) {
      blocks.push_back({b.offset, b.size, "allocated", b.requested, b.stack});
    } else {
      blocks.push_back({b.offset, b.size, b.pending ? "pending" : "free"});
    }
  }
  return {{"base", segment.base}, {"size", segment.size}, {"blocks", std::move(blocks)}};
}

}  // namespace

json out_of_memory_json(const OutOfMemory& oom) {
  const FailedRequest& r = oom.request;
  json sites = json::array();
  for (const LeadingSite& s : oom.leading_sites) {
    sites.push_back({{"stack", s.stack},
                     {"kind", s.kind},
                     {"live_bytes", s.live_bytes},
                     {"live_count", s.live_count}});
  }
  json processes = json::array();
  for (const OtherProcess& p : oom.other_processes) {
    processes.push_back({{"pid", p.pid},
                         {"command", p.command},
                         {"source", p.source},
                         {"in_use_bytes", optional(p.in_use_bytes)},
                         {"cached_bytes", optional(p.cached_bytes)},
                         {"used_bytes", optional(p.used_bytes)}});
  }
  json segments = json::array();
  for (const PoolSegment& segment : oom.segments) segments.push_back(segment_json(segment));
  return {{"request",
           {{"bytes", r.bytes},
            {"kind", r.kind},
            {"device", r.device},
            {"call", r.call},
            {"cause", r.cause},
            {"stack", r.stack}}},
          {"time", oom.time},
          {"failures", oom.failures},
          {"verdict", oom.verdict},
          {"explanation", oom.explanation},
          {"device_total_bytes", optional(oom.device_total_bytes)},
          {"device_free_bytes", optional(oom.device_free_bytes)},
          {"held_elsewhere_bytes", oom.held_elsewhere_bytes},
          {"in_use_bytes", oom.in_use_bytes},
          {"cached_bytes", oom.cached_bytes},
          {"reserved_bytes", oom.reserved_bytes},
          {"direct_bytes", oom.direct_bytes},
          {"limit_bytes", optional(oom.limit_bytes)},
          {"pool_free_bytes", oom.pool_free_bytes},
          {"pool_largest_free_block", oom.pool_largest_free_block},
          {"leading_sites", std::move(sites)},
          {"other_processes", std::move(processes)},
          {"unasked", oom.unasked},
          {"segments", std::move(segments)}};
}

}  // namespace vramshim::analyzer
