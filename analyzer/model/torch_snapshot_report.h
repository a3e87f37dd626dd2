// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot()) read into a vramshim report, so
// that report, --growth, diff, merge and html work on it (vramshim import torch-snapshot).
#pragma once

#include <string>

#include "analyzer/model/pickle_value.h"
#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// The report of a snapshot (docs/exports.md has the mapping): its segments and blocks as the
// report's segments; its device traces as the report's trace, in time order, PyTorch's
// free_requested as the free (the memory is no longer in use from then on) and the
// free_completed after it left out; one site per stack of frames, its figures from the blocks
// allocated at the end and from the trace (the trace is walked back from the end, so allocations
// older than the trace count in the live figures); the sites' history and the timeline from the
// trace. Frames whose file ends in ".py" become Python frames, the others symbolized native
// frames. `source` names the snapshot in messages. Throws std::runtime_error naming the field
// ("segments[2].blocks[0]: …") when the snapshot is not one, or holds what no report may: a stack
// of more than kMaxStackFrames frames, an int over kFigureLimit; and, before reading any segment,
// when it lists more than torch_snapshot::kMaxEntries segments, blocks and trace events. Sums of
// sizes saturate at kFigureLimit.
Report report_from_torch_snapshot(const PickleValue& snapshot, const std::string& source);

}  // namespace vramshim::analyzer
