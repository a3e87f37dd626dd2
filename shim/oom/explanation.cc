#include "shim/oom/explanation.h"

#include <algorithm>

#include "shim/oom/human_bytes.h"
#include "shim/oom/verdict.h"

namespace vramshim::oom {
namespace {

constexpr const char* kPrefix = "vramshim: ";

std::string count_text(uint64_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string kind_text(attribution::AllocationKind kind) {
  switch (kind) {
    case attribution::AllocationKind::kDevice:
      return "device memory";
    case attribution::AllocationKind::kPitched:
      return "pitched device memory";
    case attribution::AllocationKind::kAsync:
      return "stream-ordered memory";
    case attribution::AllocationKind::kManaged:
      return "managed memory";
    case attribution::AllocationKind::kHost:
      return "pinned host memory";
    case attribution::AllocationKind::kVmm:
      return "a VMM allocation";
  }
  return "memory";
}

std::string process_text(const OtherProcess& process) {
  std::string text = "pid " + std::to_string(process.pid) + " " + process.command + ": ";
  if (process.in_use_bytes) text += human_bytes(*process.in_use_bytes) + " in use";
  if (process.cached_bytes) text += ", " + human_bytes(*process.cached_bytes) + " cached";
  if (process.used_bytes) {
    if (process.in_use_bytes) text += ", ";
    text += human_bytes(*process.used_bytes) + " used";
  }
  return text + " (" + process.source + ")";
}

// The lines under "the sites holding the most".
constexpr size_t kShownSites = 5;

struct LabelledSite {
  std::string label;
  attribution::AllocationKind kind;
  uint64_t live_bytes;
  uint64_t live_count;
};

// The leading stacks summed by label and kind, most bytes first: one function reached from many
// callers is one line, with all its bytes (a line per stack repeated its name and split them).
std::vector<LabelledSite> by_label(const OutOfMemoryFacts& facts, const ExplanationLabels& labels) {
  std::vector<LabelledSite> sites;
  for (size_t i = 0; i < facts.leading_sites.size(); ++i) {
    const LeadingSite& site = facts.leading_sites[i];
    const std::string label = i < labels.leading_sites.size() ? labels.leading_sites[i] : "";
    const auto same = std::find_if(sites.begin(), sites.end(), [&](const LabelledSite& other) {
      return other.label == label && other.kind == site.kind;
    });
    if (same == sites.end()) {
      sites.push_back({label, site.kind, site.live_bytes, site.live_count});
    } else {
      same->live_bytes += site.live_bytes;
      same->live_count += site.live_count;
    }
  }
  std::stable_sort(sites.begin(), sites.end(), [](const LabelledSite& a, const LabelledSite& b) {
    return a.live_bytes > b.live_bytes;
  });
  return sites;
}

}  // namespace

std::string explain(const OutOfMemoryFacts& facts, const ExplanationLabels& labels) {
  std::vector<std::string> lines;
  const FailedRequest& request = facts.request;
  std::string head = "out of memory: " + std::string(call_name(request)) + " of " +
                     human_bytes(request.bytes) + " (" + kind_text(request.kind) + ") on device " +
                     std::to_string(request.device) + " failed";
  if (facts.failures > 1) {
    head += " (this block stands for " + std::to_string(facts.failures) +
            " failures since the last one)";
  }
  lines.push_back(head);
  if (facts.device_total_bytes && facts.device_free_bytes) {
    lines.push_back("  device " + std::to_string(request.device) + ": " +
                    human_bytes(*facts.device_total_bytes) + " total, " +
                    human_bytes(*facts.device_free_bytes) + " free, as the driver reports");
  }
  std::string mine = "  this process: " + human_bytes(facts.in_use_bytes) + " in use, " +
                     human_bytes(facts.cached_bytes) + " cached, " +
                     human_bytes(facts.reserved_bytes) + " reserved by the pool";
  if (facts.direct_bytes > 0) {
    mine += ", " + human_bytes(facts.direct_bytes) + " served by the driver directly";
  }
  lines.push_back(mine + "; largest free block in the pool " +
                  human_bytes(facts.pool_largest_free_block));
  if (facts.limit_bytes) lines.push_back("  VRAMSHIM_LIMIT: " + human_bytes(*facts.limit_bytes));
  lines.push_back("  verdict: " + describe(judge(facts), facts));
  const std::vector<LabelledSite> leading = by_label(facts, labels);
  if (!leading.empty()) {
    lines.push_back("  the sites holding the most:");
    for (size_t i = 0; i < leading.size() && i < kShownSites; ++i) {
      lines.push_back("    " + human_bytes(leading[i].live_bytes) + " in " +
                      count_text(leading[i].live_count, "allocation", "allocations") + "  " +
                      leading[i].label);
    }
  }
  if (!labels.failing_frames.empty()) {
    lines.push_back("  the failing call:");
    for (const std::string& frame : labels.failing_frames) lines.push_back("    " + frame);
  }
  if (!facts.other_processes.empty()) {
    lines.push_back("  other processes on device " + std::to_string(request.device) + ":");
    for (const OtherProcess& process : facts.other_processes) {
      lines.push_back("    " + process_text(process));
    }
  }
  for (const std::string& note : facts.unasked) lines.push_back("  (" + note + ")");
  if (!labels.report_path.empty()) {
    lines.push_back("  report: " + labels.report_path);
  } else if (!labels.report_error.empty()) {
    lines.push_back("  no report: " + labels.report_error);
  }
  std::string block;
  for (const std::string& line : lines) block += kPrefix + line + "\n";
  return block;
}

}  // namespace vramshim::oom
