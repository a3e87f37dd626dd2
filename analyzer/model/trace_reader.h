// Reads an allocation trace from a file, whatever source wrote it.
#pragma once

#include <string>

#include "analyzer/model/allocation_trace.h"
#include "analyzer/model/snapshot_file.h"

namespace vramshim::analyzer {

// Today's source is a PyTorch memory snapshot (a pickle; pickle_reader.h, torch_snapshot.h); the
// file's first byte tells sources apart, so another (a vramshim report with an event trace) can be
// added here. Throws std::runtime_error("PATH: …") with one line saying what is wrong: not a
// regular file, larger than kMaxTraceFileBytes, a vramshim report (which records no event trace
// yet), not a snapshot, or a snapshot the readers refuse.
AllocationTrace read_allocation_trace(const std::string& path);

}  // namespace vramshim::analyzer
