// A report as a PyTorch memory snapshot: the pickle `torch.cuda.memory._dump_snapshot()` writes,
// for PyTorch's memory viewer (pytorch.org/memory_viz, torch/utils/viz/MemoryViz.js) and
// `python -m torch.cuda._memory_viz`. docs/exports.md has the mapping.
#pragma once

#include <string>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// The snapshot, pickled: "segments" from the pools' segments and blocks at the report, and
// "device_traces" from the report's event trace, both with frames {filename, line, name} from the
// visible display frames; memory the pool never held (stream-ordered, VMM, managed) shown as
// segments of their own; a merged report's processes as one device index each per device they
// used (listed in "vramshim_devices"). Throws std::runtime_error when the report has neither
// segments nor a trace (a version 1 report, or one written with VRAMSHIM_TRACE=off and an empty
// pool).
std::string torch_snapshot(const Report& report, const FrameTable& table);

// Throws std::runtime_error("SOURCE: …", no prefix for an empty `source`) when the report has
// neither segments nor a trace, as torch_snapshot would: asked before the frames are symbolized,
// whose warnings would otherwise come before the error.
void require_torch_snapshot_memory(const Report& report, const std::string& source);

}  // namespace vramshim::analyzer
