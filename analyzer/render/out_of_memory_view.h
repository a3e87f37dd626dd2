// The out-of-memory sections of a report, shown before everything else: what failed and why, the
// figures at the failure, the code holding the memory (symbolized), the other processes and the
// pool's fragmentation; as text and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/out_of_memory_sections.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// One section as text; titled "Out of memory", or "Out of memory in pid …" in a merged report.
// The failing call's stack and the first leading sites' are shown to a few frames, each frame's
// text cut to kListedLineBytes.
void render_out_of_memory_section(std::ostream& out, const Report& report,
                                  const OutOfMemorySection& section, const FrameTable& table);

// Every section of the report, each followed by a blank line; nothing when it has none.
void render_out_of_memory(std::ostream& out, const Report& report, const FrameTable& table);

// The sections as a list of FORMAT.md "oom" objects, each with "process" (an index into
// processes_json(report), view_json.h), "frames" beside every "stack" (symbolized, innermost first;
// the request's first 64, a leading site's first 16) with "omitted_frames" (how many more), the
// first 10 leading sites with "omitted_leading_sites" (how many more), and "fragmentation" (the
// segments summed up).
nlohmann::json out_of_memory_view_json(const Report& report, const FrameTable& table);

}  // namespace vramshim::analyzer
