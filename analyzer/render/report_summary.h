// A short summary of a report, for the end of `vramshim run` and `vramshim demo`.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

namespace vramshim::analyzer {

// Reads the report at `path` (throws std::runtime_error like read_report) and prints its process
// and device figures, then the `top` sites by bytes at peak and by live bytes, one line each: the
// site's label (FrameTable::label) and where it is, sites with the same label summed.
void render_summary(std::ostream& out, const std::string& path, size_t top = 3);

}  // namespace vramshim::analyzer
