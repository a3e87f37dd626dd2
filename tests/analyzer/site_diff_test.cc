// diff's matching of sites between two reports.
#include "analyzer/model/site_diff.h"

#include <gtest/gtest.h>

#include <string>

#include "analyzer/model/symbolizer.h"

namespace vramshim::analyzer {
namespace {

Frame named(const std::string& function, const std::string& file, int64_t line) {
  Frame frame;
  frame.symbolized = true;
  frame.function = function;
  frame.file = file;
  frame.line = line;
  return frame;
}

// One build's run: grow_site() and two sites of two_sites(), called from main and, below it,
// _start (no debug information: known by its module and offset). `directory`, `shift` and
// `start_offset` are what a rebuild changes: the checkout, lines moved by an edit, a relink.
Report run_of(const std::string& directory, int64_t shift, uint64_t start_offset,
              int64_t grow_bytes, int64_t first_bytes) {
  Report report;
  report.process.pid = 1;
  report.modules.push_back({"/nonexistent/bin/prog", 0, "", true, false, {}});
  const std::string file = directory + "/prog.cc";
  report.frames = {named("app::grow_site()", file, 10 + shift), named("main", file, 50 + shift),
                   Frame{}, named("app::two_sites()", file, 20 + shift),
                   named("app::two_sites()", file, 22 + shift)};
  report.frames[2].module = 0;
  report.frames[2].offset = start_offset;
  report.stacks = {Stack{{0, 1, 2}}, Stack{{3, 1, 2}}, Stack{{4, 1, 2}}};
  for (int64_t stack = 0; stack < 3; ++stack) {
    Site site;
    site.stack = stack;
    site.kind = "device";
    site.live_bytes = site.total_bytes = stack == 0 ? grow_bytes : stack == 1 ? first_bytes : 7;
    site.live_count = site.total_count = 1;
    report.sites.push_back(site);
  }
  return report;
}

struct Views {
  explicit Views(const Report& r)
      : report(r), table(report, symbolizer, HidePatterns{}), sites(collect_sites(report, table)) {}
  Report report;
  Symbolizer symbolizer{nullptr};
  FrameTable table;
  std::vector<SiteView> sites;
};

// A rebuild moved every line, relinked _start elsewhere and was built in another checkout: each
// site was "gone" and "new" (16 changes for 4 in the audit); the same functions now match, and
// two sites of one function pair in the order of their lines.
TEST(SiteDiff, TwoBuildsOfAProgramCompareSiteBySite) {
  const Views before(run_of("/home/a/src", 0, 0x1150, 2, 5));
  const Views after(run_of("/scratch/b/src", 3, 0x1180, 6, 1));
  const std::vector<SiteChange> changes =
      diff_sites(before.sites, before.table, after.sites, after.table);
  ASSERT_EQ(changes.size(), 2u);
  for (const SiteChange& change : changes) {
    ASSERT_NE(change.old_site, nullptr);
    ASSERT_NE(change.new_site, nullptr);
  }
  EXPECT_EQ(changes[0].before.live_bytes, 2);  // grow_site: +4
  EXPECT_EQ(changes[0].after.live_bytes, 6);
  EXPECT_EQ(changes[1].before.live_bytes, 5);  // two_sites' first (line 20, now 23): -4
  EXPECT_EQ(changes[1].after.live_bytes, 1);
}

// Sites of one function whose counts differ between the reports cannot be paired: which is new is
// not known, so they stay new and gone.
TEST(SiteDiff, SitesOfOneFunctionInUnequalNumbersStayNewAndGone) {
  Report one_site = run_of("/home/a/src", 0, 0x1150, 2, 5);
  one_site.sites.pop_back();  // two_sites() has one site here, two in the other build
  const Views before(one_site);
  const Views after(run_of("/scratch/b/src", 3, 0x1180, 2, 5));
  const std::vector<SiteChange> changes =
      diff_sites(before.sites, before.table, after.sites, after.table);
  int news = 0, gones = 0;
  for (const SiteChange& change : changes) {
    news += change.old_site == nullptr;
    gones += change.new_site == nullptr;
  }
  EXPECT_EQ(news, 2);
  EXPECT_EQ(gones, 1);
}

}  // namespace
}  // namespace vramshim::analyzer
