// The pieces the JSON documents of the report-reading commands share (docs/cli-json.md, "Common
// objects"): frames, stacks, site figures, sites, the report's processes and header. Sizes are
// integer bytes, times seconds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"
#include "analyzer/render/listed_stacks.h"

namespace vramshim::analyzer {

// {"function", "file", "line", "library", "offset", "inlined", "kind"}: kind "python" or "native";
// library the native frame's module (basename); null where unknown or, for Python frames, not
// applicable.
nlohmann::json frame_json(const DisplayFrame& frame);

// Display frames (ids of `table`), innermost first, as frame objects.
nlohmann::json stack_json(const FrameTable& table, const std::vector<uint32_t>& frames);

// The figures of shim/support/site_figures.def, each under its own name.
nlohmann::json figures_json(const SiteFigures& figures);

// A site of a view: its figures, "kind", "label" (a frame, or null for a site without a stack),
// "frames" (the visible stack, as `lister` lists it; a view by label: the label alone),
// "omitted_frames" (those `lister` left out), "stack_count" (the stacks it sums) and, in a merged
// report, "ranks": each process's figures with "process", an index into the document's
// "processes".
nlohmann::json site_json(const FrameTable& table, const SiteView& site, StackLister& lister);

// The report's processes (a merged report's, else its own): "pid", "rank", "host", "cmdline",
// "exe", "start_time" and "report_time" (Unix seconds; null when unknown), "peak_in_use_bytes".
nlohmann::json processes_json(const Report& report);

// What the text header says of a report, as members to put into a document: "file",
// "format_version", "reason", "merged", "processes", "capture", "devices", "peak_in_use_bytes",
// "peak_seconds_after_start", "report_seconds_after_start", "site_count" and "totals" (the sums
// of `sites`).
void add_report_header(nlohmann::json& document, const Report& report,
                       const std::vector<SiteView>& sites);

}  // namespace vramshim::analyzer
