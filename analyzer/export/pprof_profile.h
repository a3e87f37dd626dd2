// A report as a pprof profile (github.com/google/pprof, profile.proto), for `go tool pprof` and the
// viewers built on it: one sample per site (per site and rank in a merged report), its stack as
// locations, symbolized.
#pragma once

#include <string>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

// The profile, serialized and gzipped as pprof reads it. Sample types, in order: inuse_space and
// inuse_objects (live at the report), peak_space (held at the process's peak), alloc_space and
// alloc_objects (ever allocated); inuse_space is the default. A location is one report frame, its
// lines the visible display frames it expands to (inlined code first, as pprof expects); Python
// frames are functions of their file. Labels: kind, pid, and rank where known. Throws
// std::runtime_error when the samples would list more than 2^25 stack frames in all (each sample
// lists its whole stack: a merged report of many ranks and deep stacks would take gigabytes).
// Only the sites `filter` keeps have samples (--module, --function).
std::string pprof_profile(const Report& report, const FrameTable& table,
                          const SiteFilter& filter = {});

}  // namespace vramshim::analyzer
