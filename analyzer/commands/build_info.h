// What `vramshim version` says about the build: stamped by //analyzer/commands:build_info_source.
#pragma once

#include <cstdint>

namespace vramshim::cli {

struct BuildInfo {
  const char* version;  // the repository's VERSION file
  const char* commit;   // git commit, "-modified" when the tree differed; "unknown" outside git
  int64_t build_time;   // seconds since the epoch; 0 when unknown
};

extern const BuildInfo kBuildInfo;

}  // namespace vramshim::cli
