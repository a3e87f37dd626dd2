// The out-of-memory explanation printed on stderr: one block, every line prefixed "vramshim: ".
#pragma once

#include <string>
#include <vector>

#include "shim/oom/out_of_memory_facts.h"

namespace vramshim::oom {

struct ExplanationLabels {
  std::vector<std::string> leading_sites;   // parallel to OutOfMemoryFacts::leading_sites
  std::vector<std::string> failing_frames;  // the failing call's first frames, innermost first
  std::string report_path;                  // empty: no report written
  std::string report_error;                 // why not, when there is none
};

std::string explain(const OutOfMemoryFacts& facts, const ExplanationLabels& labels);

}  // namespace vramshim::oom
