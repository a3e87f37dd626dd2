#include "analyzer/render/out_of_memory_view.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/fragmentation.h"
#include "analyzer/model/out_of_memory_json.h"
#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/text_report.h"
#include "analyzer/render/units.h"
#include "analyzer/render/view_json.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// The failing call's stack is shown to this depth: its innermost frames say what asked.
constexpr size_t kFailingCallFrames = 8;
// The leading sites shown (the shim writes 5), each stack to this depth, each frame cut as the
// page's stack lists cut it: whole stacks of a report of 18 KB naming one 4 KiB function 4,096
// times made 823 MB of text.
constexpr size_t kShownLeadingSites = 10;
constexpr size_t kLeadingSiteFrames = 16;
// The widest bar of the free-block histogram, in characters.
constexpr int64_t kHistogramWidth = 30;

std::string cause_text(const std::string& cause) {
  if (cause == "driver")
    return "the driver refused, even after the pool emptied its cache and retried";
  if (cause == "limit") return "VRAMSHIM_LIMIT would have been passed";
  if (cause == "too_large") return "larger than any allocation the pool can make";
  return cause;
}

// "1.0 MiB to 2.0 MiB": the sizes of a class of free blocks.
std::string size_class_text(int log2) {
  // A class starting at 2^62 bytes (the largest a report holds) ends past int64_t.
  const std::string end = log2 < 62 ? format_bytes(int64_t{1} << (log2 + 1)) : "more";
  return format_bytes(int64_t{1} << log2) + " to " + end;
}

void render_frames(std::ostream& out, const FrameTable& table, int64_t stack, size_t limit,
                   const char* indent) {
  if (stack < 0) {
    out << indent << "[no stack recorded]\n";
    return;
  }
  std::vector<uint32_t> frames;
  table.visible_stack(stack, frames);
  if (frames.empty()) out << indent << "[every frame hidden]\n";
  for (size_t i = 0; i < std::min(limit, frames.size()); ++i) {
    out << indent << listed_line(describe_frame(table.frame(frames[i]))) << '\n';
  }
  if (frames.size() > limit) {
    out << indent << "["
        << format_count_of(static_cast<int64_t>(frames.size() - limit), "more frame", "more frames")
        << "]\n";
  }
}

// "frames": the first `limit` visible frames of `stack`, and "omitted_frames": how many more.
void add_frames(json& object, const FrameTable& table, int64_t stack, size_t limit) {
  std::vector<uint32_t> frames;
  table.visible_stack(stack, frames);
  const size_t listed = std::min(frames.size(), limit);
  object["omitted_frames"] = frames.size() - listed;
  frames.resize(listed);
  object["frames"] = stack_json(table, frames);
}

std::string other_process_text(const OtherProcess& p) {
  std::string text = "pid " + std::to_string(p.pid);
  if (!p.command.empty()) text += " " + p.command;
  std::vector<std::string> figures;
  if (p.in_use_bytes) figures.push_back(format_bytes(*p.in_use_bytes) + " in use");
  if (p.cached_bytes) figures.push_back(format_bytes(*p.cached_bytes) + " cached");
  if (p.used_bytes) figures.push_back(format_bytes(*p.used_bytes) + " used");
  for (size_t i = 0; i < figures.size(); ++i) text += (i == 0 ? ": " : ", ") + figures[i];
  if (!p.source.empty()) text += " (" + p.source + ")";
  return text;
}

void render_fragmentation(std::ostream& out, const std::vector<PoolSegment>& segments) {
  const FragmentationSummary f = summarize_fragmentation(segments);
  if (f.segments == 0) {
    out << "  fragmentation: the pool held no segments\n";
    return;
  }
  out << "  fragmentation: " << format_count_of(f.segments, "segment", "segments") << " of "
      << format_bytes(f.segment_bytes) << " in all; " << format_bytes(f.free_bytes) << " free in "
      << format_count_of(f.free_blocks, "block", "blocks") << ", the largest "
      << format_bytes(f.largest_free_block);
  if (f.pending_blocks > 0) {
    out << "; " << format_bytes(f.pending_bytes) << " in "
        << format_count_of(f.pending_blocks, "block", "blocks") << " waiting for a fence";
  }
  out << '\n';
  if (f.size_classes.empty()) return;
  out << "    free blocks by size:\n";
  size_t label_width = 0;
  int64_t most = 0;
  for (const FreeBlockSizeClass& c : f.size_classes) {
    label_width = std::max(label_width, size_class_text(c.log2).size());
    most = std::max(most, c.blocks);
  }
  for (const FreeBlockSizeClass& c : f.size_classes) {
    std::string label = size_class_text(c.log2);
    label.resize(label_width, ' ');
    // Every class that has a block gets at least one mark.
    const int64_t marks = std::max<int64_t>(1, c.blocks * kHistogramWidth / most);
    std::string bar(static_cast<size_t>(marks), '#');
    bar.resize(static_cast<size_t>(kHistogramWidth), ' ');
    out << "      " << label << "  " << bar << "  " << format_count_of(c.blocks, "block", "blocks")
        << ", " << format_bytes(c.bytes) << '\n';
  }
}

json fragmentation_json(const std::vector<PoolSegment>& segments) {
  const FragmentationSummary f = summarize_fragmentation(segments);
  json classes = json::array();
  for (const FreeBlockSizeClass& c : f.size_classes) {
    classes.push_back(
        {{"min_bytes", int64_t{1} << c.log2}, {"blocks", c.blocks}, {"bytes", c.bytes}});
  }
  return {{"segments", f.segments},
          {"segment_bytes", f.segment_bytes},
          {"free_blocks", f.free_blocks},
          {"free_bytes", f.free_bytes},
          {"largest_free_block", f.largest_free_block},
          {"pending_blocks", f.pending_blocks},
          {"pending_bytes", f.pending_bytes},
          {"free_block_sizes", std::move(classes)}};
}

}  // namespace

void render_out_of_memory_section(std::ostream& out, const Report& report,
                                  const OutOfMemorySection& section, const FrameTable& table) {
  const OutOfMemory& oom = *section.oom;
  const ProcessInfo& process = *section.process;
  const FailedRequest& r = oom.request;
  out << "Out of memory";
  if (report.merged()) out << " in " << describe_process(process);
  out << ": " << r.call << " of " << format_bytes(r.bytes) << " [" << r.kind << "] on device "
      << r.device << " failed";
  if (oom.time > 0 && process.start_time > 0) {
    out << ", " << format_seconds(process.seconds_since_start(oom.time)) << " after start";
  }
  out << '\n';
  if (oom.failures > 1) {
    out << "  failures: " << format_count(oom.failures)
        << " (this explanation stands for them all)\n";
  }
  out << "  cause:    " << cause_text(r.cause) << '\n'
      << "  verdict:  " << (oom.explanation.empty() ? oom.verdict : oom.explanation) << '\n'
      << "  device " << r.device << ": ";
  // What other processes hold is known only from the device's total and free.
  if (oom.device_total_bytes && oom.device_free_bytes) {
    out << format_bytes(*oom.device_total_bytes) << " total, "
        << format_bytes(*oom.device_free_bytes) << " free, as the driver reported; "
        << format_bytes(oom.held_elsewhere_bytes) << " held by other processes\n";
  } else if (oom.device_free_bytes) {
    out << format_bytes(*oom.device_free_bytes) << " free, total unknown\n";
  } else {
    out << "total and free unknown\n";
  }
  out << "  process:  in use " << format_bytes(oom.in_use_bytes) << ", cached "
      << format_bytes(oom.cached_bytes) << ", reserved " << format_bytes(oom.reserved_bytes)
      << " by the pool; " << format_bytes(oom.direct_bytes) << " served by the driver directly\n"
      << "  pool:     " << format_bytes(oom.pool_free_bytes) << " free, the largest free block "
      << format_bytes(oom.pool_largest_free_block) << '\n';
  if (oom.limit_bytes)
    out << "  limit:    VRAMSHIM_LIMIT " << format_bytes(*oom.limit_bytes) << '\n';
  out << "  the failing call:\n";
  render_frames(out, table, r.stack, kFailingCallFrames, "    ");
  if (!oom.leading_sites.empty()) out << "  the sites holding the most at the failure:\n";
  const size_t shown_sites = std::min(oom.leading_sites.size(), kShownLeadingSites);
  for (size_t i = 0; i < shown_sites; ++i) {
    const LeadingSite& site = oom.leading_sites[i];
    out << "    #" << (i + 1) << "  " << format_bytes(site.live_bytes) << " in "
        << format_count_of(site.live_count, "allocation", "allocations") << "  [" << site.kind
        << "]\n";
    render_frames(out, table, site.stack, kLeadingSiteFrames, "        ");
  }
  if (oom.leading_sites.size() > shown_sites) {
    out << "    ["
        << format_count_of(static_cast<int64_t>(oom.leading_sites.size() - shown_sites),
                           "more site", "more sites")
        << "]\n";
  }
  out << "  other processes on device " << r.device << ":";
  // An imported PyTorch snapshot never looked (its "not asked" line says so).
  const bool imported = (report.merged() ? process.reason : report.reason) == "import";
  if (oom.other_processes.empty()) out << (imported ? " unknown" : " none found");
  out << '\n';
  for (const OtherProcess& p : oom.other_processes) out << "    " << other_process_text(p) << '\n';
  for (const std::string& note : oom.unasked) out << "    not asked: " << note << '\n';
  render_fragmentation(out, oom.segments);
}

void render_out_of_memory(std::ostream& out, const Report& report, const FrameTable& table) {
  for (const OutOfMemorySection& section : out_of_memory_sections(report)) {
    render_out_of_memory_section(out, report, section, table);
    out << '\n';
  }
}

json out_of_memory_view_json(const Report& report, const FrameTable& table) {
  json list = json::array();
  for (const OutOfMemorySection& section : out_of_memory_sections(report)) {
    const OutOfMemory& oom = *section.oom;
    json entry = out_of_memory_json(oom);
    entry["process"] = report.merged() ? section.process - report.merged_from.data() : 0;
    add_frames(entry["request"], table, oom.request.stack, StackLister::kListedFrames);
    json& leading = entry["leading_sites"];
    const size_t shown_sites = std::min(leading.size(), kShownLeadingSites);
    leading.erase(leading.begin() + static_cast<std::ptrdiff_t>(shown_sites), leading.end());
    entry["omitted_leading_sites"] = oom.leading_sites.size() - shown_sites;
    for (size_t i = 0; i < shown_sites; ++i) {
      add_frames(leading[i], table, oom.leading_sites[i].stack, kLeadingSiteFrames);
    }
    entry["fragmentation"] = fragmentation_json(oom.segments);
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace vramshim::analyzer
