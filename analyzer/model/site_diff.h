// What changed per site between two reports (two moments of one process, or two runs), stacks
// matched by symbolized frames so that load addresses do not matter.
#pragma once

#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/report.h"
#include "analyzer/model/site_view.h"

namespace vramshim::analyzer {

struct SiteChange {
  const SiteView* old_site = nullptr;  // null: a new site
  const SiteView* new_site = nullptr;  // null: the site is gone
  SiteFigures before;
  SiteFigures after;

  int64_t live_growth() const { return after.live_bytes - before.live_bytes; }
};

// Every site whose figures differ, largest growth of live bytes first (then growth of total bytes).
// Sites match by their frames (file:line, or module+offset without line information); those left
// then match by their functions alone, so that two builds of a program (lines moved by an edit,
// addresses by a relink, paths by a checkout elsewhere) still compare site by site.
std::vector<SiteChange> diff_sites(const std::vector<SiteView>& old_sites,
                                   const FrameTable& old_table,
                                   const std::vector<SiteView>& new_sites,
                                   const FrameTable& new_table);

}  // namespace vramshim::analyzer
